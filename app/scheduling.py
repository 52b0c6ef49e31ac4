"""Running due tasks: claim each due run, deliver it, record it, move the task on.

`run_due` is one pass of a scheduler: it claims the runs due by now (with several
processes on one database each run is claimed by exactly one, `TaskRepository.
claim_due`), hands each to `deliver` and then records it with the task's next time. A
run delivered more than `LATE_AFTER_S` after its time is marked late (the process was
down); a recurring task then runs next at its first time after now, so missed periods
are not caught up one by one. A run is recorded only after `deliver` returns: a process
that dies in between leaves its claim to expire, and the run is delivered again.

Without a model a run's message is its request, as written (`fallback_reason`
"no_model").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from core.records import parse_timestamp
from core.when import next_run

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.tasks import TaskRow

LATE_AFTER_S = 60.0
Deliver = Callable[[int, "TaskRow", str, bool], Awaitable[None]]
"""`deliver(user_id, task, text, late)`: send a run's message; raises when it could not."""

log = logging.getLogger(__name__)


async def run_due(
    deps: Deps, owner: str, deliver: Deliver, now: datetime | None = None, limit: int = 50
) -> int:
    """One pass: deliver and record the runs due by `now` that `owner` claims; how many
    were delivered. A run whose delivery fails stays claimed until its lease ends, then
    is tried again."""
    store = deps.store.tasks
    moment = now or datetime.now(UTC)
    lease = deps.settings.task_claim_lease_s
    claimed = await asyncio.to_thread(store.claim_due, moment, owner, lease, limit)
    delivered = 0
    for due in claimed:
        user_id, task = due["user_id"], due["task"]
        due_at = task["next_run_at"] or moment.isoformat()
        late = (moment - parse_timestamp(due_at)).total_seconds() > LATE_AFTER_S
        started = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            await deliver(user_id, task, task["request"], late)
        except Exception:
            log.exception("task %s: delivery failed; retried after the claim expires", task["id"])
            continue
        following = next_run(task["rule"], task["timezone"], moment) if task["rule"] else None
        run = {
            "due_at": due_at,
            "started_at": started,
            "output": task["request"],
            "fallback_reason": "no_model",
            "late": late,
        }
        await asyncio.to_thread(store.finish_run, user_id, task["id"], owner, run, following)
        delivered += 1
    return delivered
