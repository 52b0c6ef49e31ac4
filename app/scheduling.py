"""Running due tasks: claim each due run, write its message, deliver it, record it.

`run_due` is one pass of a scheduler: it claims the runs due by now (with several
processes on one database each run is claimed by exactly one, `TaskRepository.
claim_due`), runs each through the task graph (`graphs/tasks.py`: a reminder as written,
a task asking for work by the Tasker over the user's memory), stores the message in the
user's history as a `task` message (a work run's with its sources, recorded like an
answer's; written inside `streams`, which may show it while the Tasker writes it, as a
turn's answer streams), hands it to `deliver` and then records the run with
the task's next time. A run delivered more than `LATE_AFTER_S` after its time is marked
late (the process was down); a recurring task then runs next at its first time after
now, so missed periods are not caught up one by one. A run is recorded only after
`deliver` returns: a process that dies in between leaves its claim to expire, and the
run is delivered again (its message, stored under the run's own external id, once).
A delivery refused for good (`Undeliverable`: the user blocked the bot, the chat is
gone) ends the run all the same, recorded as not delivered, and the task moves on; its
message, which the user never received, leaves the user's history (it is stored before
the send so that a work run's message can carry its Sources button, and so that a run
sent again after a crash is stored once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from langgraph.graph.state import CompiledStateGraph

from app.deadline import Progress
from app.turns import OnText, turn_states
from core.context import TaskContext
from core.records import NewMessage, parse_timestamp
from core.when import next_run
from graphs.tasks import build_task_graph
from nodes.response.finalize import store_answer
from nodes.response.task_run import task_sources, tools_called

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.tasks import TaskRow

LATE_AFTER_S = 60.0
Deliver = Callable[[int, "TaskRow", str, bool, int | None], Awaitable[None]]
"""`deliver(user_id, task, text, late, answer_id)`: send a run's message (`answer_id`: the
stored message whose sources a work run's message shows, else None); raises when it
could not."""

Streams = Callable[[int, str], AbstractAsyncContextManager[OnText | None]]
"""`streams(user_id, run_id)`: while the block runs, where a run's message being written
goes (`on_text`, the bot's drafts), or None; the run's message is delivered after it."""

WORK_NODES = frozenset({"work"})
"""The task graph's node whose model writes a work run's message."""

UNDELIVERABLE = "undeliverable"
"""The run's fallback reason when its message could never reach the user."""

log = logging.getLogger(__name__)


class Undeliverable(Exception):
    """Raised by `deliver` when the user can never receive the message (not a passing
    failure): the run is recorded with `UNDELIVERABLE` instead of retried."""


def task_message_id(task_id: int, due_at: str) -> str:
    """The external id of a run's stored message: the task is its source."""
    return f"task:{task_id}:{due_at}"


def store_run_message(deps: Deps, user_id: int, message: NewMessage, state: dict) -> int | None:
    """The run's message in the user's history; a work run's with its sources recorded
    like an answer's (written by the Tasker, or `memory` when it fell back), whose
    stored id it returns (None for a reminder, which has no sources)."""
    if state.get("kind") != "work":
        deps.store.messages.add(user_id, [message])
        return None
    answered_by = "memory" if state.get("task_fallback") else "responder"
    return store_answer(
        deps, user_id, message, task_sources(state), answered_by=answered_by, partial=False
    )


@contextlib.asynccontextmanager
async def unstreamed(user_id: int, run_id: str) -> AsyncIterator[OnText | None]:
    """No streaming: each run's message is written whole."""
    yield None


async def run_graph(
    graph: CompiledStateGraph, run_input: dict, context: TaskContext, on_text: OnText | None
) -> dict:
    """The task graph's final state; with `on_text`, run with the turn's streaming
    (`app.turns.turn_states`), telling it of the message while the Tasker writes it."""
    if on_text is None:
        return await graph.ainvoke(run_input, context=context)
    return await Progress().follow(turn_states(graph, run_input, {}, context, on_text, WORK_NODES))


async def write_run(
    deps: Deps,
    graph: CompiledStateGraph,
    user_id: int,
    task: TaskRow,
    due_at: str,
    now: datetime,
    on_text: OnText | None = None,
) -> tuple[dict, int | None]:
    """The run's message from the task graph, stored in the user's history (kind `task`);
    the graph's state and the stored answer's id of a work run."""
    context = TaskContext.from_settings(
        deps.settings,
        user_id=user_id,
        now_iso=now.isoformat(),
        run_id=task_message_id(task["id"], due_at),
    )
    run_input = {"task_id": task["id"], "request": task["request"]}
    state = await run_graph(graph, run_input, context, on_text)
    message = NewMessage(
        external_id=task_message_id(task["id"], due_at),
        role="assistant",
        content=state["message"],
        created_at=now.isoformat(timespec="seconds"),
        kind="task",
    )
    answer_id = await asyncio.to_thread(store_run_message, deps, user_id, message, state)
    return state, answer_id


async def run_due(
    deps: Deps,
    owner: str,
    deliver: Deliver,
    now: datetime | None = None,
    limit: int = 50,
    streams: Streams = unstreamed,
) -> int:
    """One pass: deliver and record the runs due by `now` that `owner` claims; how many
    were delivered. A run whose delivery fails stays claimed until its lease ends, then
    is tried again; one that is `Undeliverable` is recorded and not tried again. Each
    run's message is written inside `streams(user_id, run_id)`."""
    store = deps.store.tasks
    moment = now or datetime.now(UTC)
    lease = deps.settings.task_claim_lease_s
    claimed = await asyncio.to_thread(store.claim_due, moment, owner, lease, limit)
    graph = build_task_graph(deps).compile(name="tasks") if claimed else None
    delivered = 0
    for due in claimed:
        user_id, task = due["user_id"], due["task"]
        due_at = task["next_run_at"] or moment.isoformat()
        late = (moment - parse_timestamp(due_at)).total_seconds() > LATE_AFTER_S
        started = datetime.now(UTC).isoformat(timespec="seconds")
        fallback: str | None = None
        try:
            async with streams(user_id, task_message_id(task["id"], due_at)) as on_text:
                state, answer_id = await write_run(
                    deps, graph, user_id, task, due_at, moment, on_text
                )
            await deliver(user_id, task, state["message"], late, answer_id)
        except Undeliverable as error:
            log.warning("task %s: undeliverable (%s); the run ends undelivered", task["id"], error)
            fallback = UNDELIVERABLE
        except Exception:
            log.exception("task %s: delivery failed; retried after the claim expires", task["id"])
            continue
        following = next_run(task["rule"], task["timezone"], moment) if task["rule"] else None
        run = {
            "due_at": due_at,
            "started_at": started,
            "output": state["message"],
            "tools_called": tools_called(state),
            "fallback_reason": fallback or state.get("task_fallback"),
            "late": late,
        }
        recorded = await asyncio.to_thread(
            store.finish_run, user_id, task["id"], owner, run, following
        )
        if recorded is not None and fallback == UNDELIVERABLE:
            external_id = task_message_id(task["id"], due_at)
            await asyncio.to_thread(deps.store.messages.remove_task_message, user_id, external_id)
        delivered += fallback is None
    return delivered
