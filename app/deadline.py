"""A turn's deadline as a bound on the user's wait.

The models get the deadline less a reserve (`TOPICA_TURN_FALLBACK_RESERVE_S`, or the
measured cost of the latest memory-only answers if longer; at most half the deadline);
when they are still working then, their run is cancelled and the turn is answered
without models from what the run had reached: past `assemble`, the memory-only answer of
its recalled context; before it, the whole model-less graph. That answer, stored and sent
with the note, gets whatever is left of the deadline; should it run out too, the user
gets the note alone. Either way the answer arrives before the deadline, and the model's late
output is never sent on. Should the budget run out while `finalize` stores the model's
answer, that answer stands: the run and the deadline claim the turn's answer atomically,
so only one is stored, the one sent, and a store still going at the deadline (a slow
disk) ends on its own while its answer is sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from core.context import AnswerClaim, ResponseContext
from core.deps import Deps
from core.models import ModelRegistry
from graphs.response import build_response_graph
from nodes.response.finalize import noted
from nodes.response.offline_answer import WORDING, language_of

DEADLINE_NOTE = {
    "ru": "Модель не ответила за {seconds:g} с, поэтому вот что я вспомнил.",
    "en": "The model did not answer within {seconds:g} s, so here is what I recalled.",
}
DEADLINE = "deadline"
"""The deadline's claim on the turn's answer (`ResponseContext.answer_claim`)."""
ASSEMBLED_KEY = "context_tokens"
"""Written by `assemble`: a state holding it has everything the memory-only answer reads."""


def without_models(deps: Deps) -> Deps:
    """The same services with no chat model: every agent takes its non-LLM path."""
    return dataclasses.replace(deps, models=ModelRegistry.fixed({}, deps.settings))


@dataclasses.dataclass
class Progress:
    """The latest full state a turn's run has reached (LangGraph's `values` stream)."""

    state: dict[str, Any] = dataclasses.field(default_factory=dict)

    async def follow(self, values: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
        async for state in values:
            self.state = state
        return self.state


def model_budget_s(deadline_s: float, reserve_s: float) -> float:
    """The seconds the models get: the deadline less the fallback's reserve, which is
    never more than half the deadline."""
    return deadline_s - min(reserve_s, deadline_s / 2)


class FallbackCost:
    """How long this process's memory-only answers took, from the cut to the answer: the
    reserve is never less than the longest of the latest ones, with a margin, so that on
    a loaded machine the models are cut early enough for the answer to make the deadline."""

    MARGIN = 1.25

    def __init__(self, size: int = 20) -> None:
        self._seconds: deque[float] = deque(maxlen=size)

    def record(self, seconds: float) -> None:
        self._seconds.append(seconds)

    def reserve_s(self, configured_s: float) -> float:
        """The reserve to keep: the configured one, or the measured cost if longer."""
        return max(configured_s, max(self._seconds, default=0.0) * self.MARGIN)


FALLBACK_COST = FallbackCost()


async def within_deadline(
    deps: Deps,
    run: Awaitable[dict[str, Any]],
    progress: Progress,
    turn_input: dict[str, Any],
    config: dict[str, Any],
    context: ResponseContext,
    started: float,
) -> dict[str, Any]:
    """The run's final state, or past the models' budget the memory-only answer (with the
    note and `deadline_exceeded`), in time for `TOPICA_TURN_DEADLINE_S` counted from
    `started` (`time.monotonic()` when the turn began)."""
    deadline_s = deps.settings.turn_deadline_s
    if not deadline_s:
        return await run
    reserve_s = FALLBACK_COST.reserve_s(deps.settings.turn_fallback_reserve_s)
    budget_s = model_budget_s(deadline_s, reserve_s)
    # Built while the models work, so that the reserve goes to answering, not building.
    offline = asyncio.ensure_future(asyncio.to_thread(offline_graph, deps))
    task = asyncio.ensure_future(run)
    try:
        await asyncio.wait({task}, timeout=budget_s - (time.monotonic() - started))
    except asyncio.CancelledError:
        task.cancel()
        raise
    left_s = deadline_s - (time.monotonic() - started)
    if task.done() or not context.answer_claim.claim(DEADLINE):
        # Done, or `finalize` is storing the model's answer: that answer is the one sent.
        offline.cancel()
        return await settled(task, context.answer_claim, left_s, progress.state)
    task.cancel()
    cut = time.monotonic()
    note = DEADLINE_NOTE[language_of(turn_input["text"])].format(seconds=deadline_s)
    late_context = dataclasses.replace(context, answer_claim=AnswerClaim(), answer_note=note)
    late = late_answer(offline, progress.state, turn_input, config, late_context)
    state = await settled(asyncio.ensure_future(late), late_context.answer_claim, left_s)
    FALLBACK_COST.record(time.monotonic() - cut)
    if not state.get("answer"):  # nothing finished in time: the note alone, nothing stored
        state = {"answer": noted(note, WORDING[language_of(turn_input["text"])].nothing)}
    return {**state, "deadline_exceeded": True}


async def settled(
    task: asyncio.Future[dict[str, Any]],
    claim: AnswerClaim,
    within_s: float,
    reached: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`task`'s final state if it ends within `within_s`; else what the claim says: the
    answer its `finalize` is storing (the store ends on its own; the state is `reached`
    with that answer), or, claimed for the deadline here, no answer (the task cancelled,
    nothing stored). Nothing that cannot be interrupted, a store in a thread, holds the
    answer past the deadline."""
    try:
        done, _ = await asyncio.wait({task}, timeout=max(within_s, 0))
    except asyncio.CancelledError:
        task.cancel()
        raise
    if done:
        return task.result()
    if claim.claim(DEADLINE):
        task.cancel()
        return {}
    task.add_done_callback(retrieved)
    return {**(reached or {}), "answer": claim.answer, "answer_message_id": None}


def retrieved(task: asyncio.Future[Any]) -> None:
    """A store left to end on its own: its failure is logged by its node, not re-raised."""
    if not task.cancelled():
        task.exception()


def offline_graph(deps: Deps) -> CompiledStateGraph:
    """The response graph without models, with a checkpointer of its own to resume in."""
    return build_response_graph(without_models(deps)).compile(
        checkpointer=InMemorySaver(), name="response"
    )


async def late_answer(
    offline: Awaitable[CompiledStateGraph],
    reached: dict[str, Any],
    turn_input: dict[str, Any],
    config: dict[str, Any],
    context: ResponseContext,
) -> dict[str, Any]:
    """The model-less graph's final state, resumed after `assemble` when the cancelled run
    got that far."""
    graph = await offline
    start: dict[str, Any] | None = turn_input
    if ASSEMBLED_KEY in reached:
        await graph.aupdate_state(config, reached, as_node="assemble")
        start = None
    return await graph.ainvoke(start, config, context=context)
