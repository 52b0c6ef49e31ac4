"""Scheduled tasks and reminders, shared by every front end: create one from a "when"
and a request, list a user's tasks with their next run in the user's time zone,
pause, resume or cancel one, and choose the user's time zone.

Every call takes the user id; a task of another user is "no such task".
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import available_timezones

from core.records import parse_timestamp
from core.when import next_run, split_request, zone
from nodes.shared.tasks import add_task, user_timezone

__all__ = [
    "TaskError",
    "add_from_text",
    "add_task",
    "change_task",
    "list_tasks",
    "repeats",
    "set_user_timezone",
    "task_view",
    "tasks_export",
    "user_timezone",
]

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.tasks import TaskRow


TaskAction = Literal["pause", "resume", "cancel"]


class TaskError(ValueError):
    """A task that does not exist (for this user) or cannot change as asked."""


class NoSuchTask(TaskError):
    """No task of this id belongs to the user."""


@cache
def _zones_by_city() -> dict[str, str]:
    """Each IANA zone by its last part, lower-cased, spaces for underscores ("new york")."""
    found: dict[str, str] = {}
    for name in sorted(available_timezones()):
        city = name.rsplit("/", 1)[-1].replace("_", " ").lower()
        found.setdefault(city, name)
    return found


def set_user_timezone(deps: Deps, user_id: int, text: str) -> str:
    """Choose the user's zone by its IANA name ("Europe/Moscow") or its city ("Moscow",
    "new york"); the zone's name. Raises `WhenError` for a name that is neither."""
    name = text.strip()
    if "/" not in name and name.upper() != "UTC":
        name = _zones_by_city().get(" ".join(name.lower().split()).replace("_", " "), name)
    zone(name)
    deps.store.tasks.set_timezone(user_id, name)
    return name


def add_from_text(deps: Deps, user_id: int, text: str, now: datetime | None = None) -> TaskRow:
    """A new task from `<when> <what>` in one text ("через 5 секунд выпить воды"); raises
    `WhenError` (nothing created) when either cannot be read."""
    timezone = user_timezone(deps, user_id)
    found, request = split_request(text, now or datetime.now(UTC), timezone)
    return deps.store.tasks.add(user_id, request, found.first_run, timezone, found.rule)


def repeats(rule: str | None) -> str | None:
    """How a task repeats: "daily", "weekdays" or "weekly"; None for one run."""
    if rule is None:
        return None
    if "FREQ=DAILY" in rule:
        return "daily"
    return "weekdays" if "BYDAY=MO,TU,WE,TH,FR" in rule else "weekly"


def change_task(
    deps: Deps,
    user_id: int,
    task_id: int,
    action: TaskAction,
    now: datetime | None = None,
) -> TaskRow:
    """Pause, resume or cancel one of the user's tasks. A resumed recurring task runs next
    at its first time after now; a resumed one-time task whose time passed runs at once."""
    store = deps.store.tasks
    task = store.get(user_id, task_id)
    if task is None:
        raise NoSuchTask(f"no task {task_id}")
    if task["state"] in ("done", "cancelled"):
        raise TaskError(f"task {task_id} is {task['state']}")
    if action == "cancel":
        changed = store.set_state(user_id, task_id, "cancelled")
    elif action == "pause":
        changed = store.set_state(user_id, task_id, "paused")
    else:
        moment = now or datetime.now(UTC)
        following = next_run(task["rule"], task["timezone"], moment) if task["rule"] else None
        changed = store.set_state(user_id, task_id, "active", following)
    assert changed is not None  # the task is the user's and still open
    return changed


def task_view(task: TaskRow, timezone: str) -> dict[str, Any]:
    """A task as front ends show it: its next run in the user's zone."""
    next_at = task["next_run_at"]
    local = parse_timestamp(next_at).astimezone(zone(timezone)) if next_at else None
    return {
        "id": task["id"],
        "request": task["request"],
        "state": task["state"],
        "recurring": task["rule"] is not None,
        "rule": task["rule"],
        "next_run": local.isoformat() if local else None,
        "next_run_local": local.strftime("%Y-%m-%d %H:%M %Z") if local else None,
        "timezone": timezone,
    }


def list_tasks(deps: Deps, user_id: int, open_only: bool = False) -> list[dict[str, Any]]:
    """The user's tasks (only active and paused ones when `open_only`), oldest first."""
    states = ("active", "paused") if open_only else ("active", "paused", "done", "cancelled")
    timezone = user_timezone(deps, user_id)
    return [task_view(task, timezone) for task in deps.store.tasks.of_user(user_id, states)]


def tasks_export(deps: Deps, user_id: int) -> list[dict[str, Any]]:
    """Every task of the user with its runs, for `topica export`."""
    store = deps.store.tasks
    return [
        {**task, "runs": store.runs(user_id, task["id"], limit=2**31)}
        for task in store.of_user(user_id)
    ]
