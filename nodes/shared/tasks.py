"""Creating a scheduled task, shared by the CLI, the bot (through `app.tasks`) and the
responder's `schedule_task` tool: the "when" read in the user's time zone, the task
stored for that user only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core.when import WhenError, parse_when

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.tasks import TaskRow


def user_timezone(deps: Deps, user_id: int) -> str:
    """The user's time zone: the one chosen, else `TOPICA_DEFAULT_TIMEZONE`."""
    return deps.store.tasks.timezone(user_id) or deps.settings.default_timezone


def add_task(
    deps: Deps, user_id: int, when_text: str, request: str, now: datetime | None = None
) -> TaskRow:
    """A new task from a "when" expression; raises `WhenError` (nothing created) when the
    time cannot be read or the request is empty."""
    if not request.strip():
        raise WhenError("say what the task is, e.g. 'позвонить маме'")
    timezone = user_timezone(deps, user_id)
    found = parse_when(when_text, now or datetime.now(UTC), timezone)
    return deps.store.tasks.add(user_id, request, found.first_run, timezone, found.rule)
