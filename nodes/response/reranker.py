"""Reranker nodes (seed 001): two model turns around `get_topics_content`, and the fallbacks.

The nodes that talk to the model route with `Command`: what they observe (a tool call, the
final JSON, an error, a timeout, a protocol violation) picks the edge, and a fallback edge
carries its reason in `rerank_fallback`. The fallback nodes apply the seed's strategy for
that reason. Every model call gets what is left of the run's `rerank_timeout_s` budget.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext
from core.deps import Deps
from core.fallbacks import AgentFallback, RerankFallback
from core.found import Found, PersonCandidate, TopicCandidate, found_in
from core.metrics import (
    RERANKER_CANDIDATES_IN,
    RERANKER_CANDIDATES_OUT,
    RERANKER_FALLBACKS,
    RERANKER_SELECTED,
)
from core.state import RerankInput, RerankState, ResponseState
from core.tracing import user_key
from nodes.response.rerank_selection import (
    Selection,
    build_prompt,
    content_calls,
    fallback_selection,
    owned_candidates,
    parse_answer,
    requested_topic_ids,
    select_answer,
)
from nodes.shared.agent import JSON_MODE, LEDGER, call_agent, describe, repairs_update
from nodes.shared.endpoint import force_mechanism
from nodes.shared.structured import LLMOutputError, message_text

log = logging.getLogger(__name__)

FORCING_TOOL_CHOICES = frozenset({"named", "required"})
"""The mechanisms that make the endpoint itself call the tool; with any weaker one the
first turn's call is left to chance, so the reranker does not ask (`unforced_call`)."""


def remaining_budget(started_at: float, timeout_s: float, now: float) -> float:
    return timeout_s - (now - started_at)


async def take_turn(
    deps: Deps,
    state: RerankState,
    context: ResponseContext,
    bind: Callable[[BaseChatModel], Runnable] | None,
    fallback_node: Literal["vector_fallback", "requested_fallback"],
    force_tool: BaseTool | None = None,
) -> tuple[AIMessage, dict] | Command:
    """One reranker turn within what is left of the run's time budget: the reply and the
    update that records it, or the fallback edge when the provider failed."""
    calls = state["rerank_llm_calls"] + 1
    left = remaining_budget(state["started_at"], context.rerank_timeout_s, time.monotonic())
    result = (
        await call_agent(
            deps.models,
            "reranker",
            state["messages"],
            user_id=context.user_id,
            parse=lambda reply: reply,
            bind=bind,
            timeout_s=left,
            force_tool=force_tool,
        )
        if left > 0
        else AgentFallback("timeout", "the reranker's time budget was spent")
    )
    if isinstance(result, AgentFallback):
        after_tool = fallback_node == "requested_fallback"
        if result.reason == "timeout":
            reason: RerankFallback = "timeout_after_tool" if after_tool else "timeout_before_tool"
        else:
            reason = "api_error"
        return Command(
            goto=fallback_node, update={"rerank_fallback": reason, "rerank_llm_calls": calls}
        )
    update = {"messages": [result.value], "rerank_llm_calls": calls}
    return result.value, {**update, **repairs_update("reranker", result)}


def fall_back(node: str, answered: dict, reason: RerankFallback) -> Command:
    return Command(goto=node, update={**answered, "rerank_fallback": reason})


def tool_call_update(state: RerankState, reply: AIMessage, tool_calls: int) -> dict:
    return {
        "requested_ids": [*state["requested_ids"], *requested_topic_ids(reply)],
        "tool_calls": tool_calls,
    }


def confirmed(
    deps: Deps,
    user_id: int,
    candidates: Sequence[TopicCandidate],
    people: Sequence[PersonCandidate],
) -> tuple[list[TopicCandidate], list[PersonCandidate]]:
    """The candidates the user's own rows confirm (a foreign id is dropped and logged)."""
    owned, owned_people = owned_candidates(deps.store, user_id, candidates, people)
    ignored = len(candidates) - len(owned) + len(people) - len(owned_people)
    if ignored:
        log.warning("user %s: reranker ignored %d foreign candidates", user_key(user_id), ignored)
    return owned, owned_people


def settled_reason(
    deps: Deps, context: ResponseContext, candidates: Sequence[object]
) -> RerankFallback | None:
    """The fallback a reranking takes before any model call (`prepare`'s labelled edge to
    `vector_fallback`), or None when the model is to be asked."""
    if not candidates:
        return "no_candidates"
    if not context.reranker_enabled:
        return "disabled"
    if deps.models.get("reranker") is None:
        return "no_model"
    if force_mechanism(deps.models.settings) not in FORCING_TOOL_CHOICES:
        LEDGER.record("reranker", "unforced_call", None, time.monotonic())
        return "unforced_call"
    return None


def make_prepare(deps: Deps):
    async def prepare(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["request_content", "vector_fallback"]]:
        started_at = time.monotonic()
        context = runtime.context
        found = state["found"]
        candidates, people = await asyncio.to_thread(
            confirmed, deps, context.user_id, found["topics"], found["people"]
        )
        fresh = {
            "started_at": started_at,
            "found": Found(**{**found, "topics": candidates, "people": people}),
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
            "requested_ids": [],
            "tool_calls": 0,
            "rerank_llm_calls": 0,
            "rerank_dropped_ids": 0,
            "rerank_fallback": None,
            "selected_by_search_order": False,
            "selected_topics": [],
            "selected_people": [],
        }
        reason = settled_reason(deps, context, candidates)
        if reason is not None:
            return Command(goto="vector_fallback", update={**fresh, "rerank_fallback": reason})
        profile = state.get("profile")
        if profile is None:
            profile = await asyncio.to_thread(core_profile, deps, context.user_id)
        prompt_messages = build_prompt({**state, "profile": profile}, candidates, people, context)
        return Command(
            goto="request_content",
            update={
                **fresh,
                "profile": profile,
                "messages": [*fresh["messages"], *prompt_messages],
            },
        )

    return prepare


def make_request_content(deps: Deps, content_tool: BaseTool):
    """Turn 1: the model must call `get_topics_content`, forced by the strongest mechanism
    the endpoint honours (`call_agent`'s `force_tool`; no response_format, which some
    providers refuse together with a forced tool)."""

    async def request_content(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["load_content", "vector_fallback"]]:
        turn = await take_turn(
            deps, state, runtime.context, None, "vector_fallback", force_tool=content_tool
        )
        if isinstance(turn, Command):
            return turn
        reply, answered = turn
        if not content_calls(reply):
            return fall_back("vector_fallback", answered, "protocol_violation")
        update = {**answered, **tool_call_update(state, reply, state["tool_calls"] + 1)}
        return Command(goto="load_content", update=update)

    return request_content


def make_choose(deps: Deps, content_tool: BaseTool):
    """Turn 2: the final JSON (response_format json_object). The tool stays bound, unforced,
    so the model may load more content, up to `rerank_max_tool_calls` calls in all.

    The tool is bound `strict`: with a response_format, ChatOpenAI sends the request through
    the SDK's `parse`, which accepts strict function tools only.
    """

    def bind(model: BaseChatModel) -> Runnable:
        return model.bind_tools([content_tool], strict=True).bind(response_format=JSON_MODE)

    async def choose(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["finish", "load_content", "requested_fallback"]]:
        context = runtime.context
        turn = await take_turn(deps, state, context, bind, "requested_fallback")
        if isinstance(turn, Command):
            return turn
        reply, answered = turn
        if content_calls(reply):
            tool_calls = state["tool_calls"] + 1
            if tool_calls > context.rerank_max_tool_calls:
                return fall_back("requested_fallback", answered, "tool_call_limit")
            update = {**answered, **tool_call_update(state, reply, tool_calls)}
            return Command(goto="load_content", update=update)
        try:
            answer = parse_answer(message_text(reply))
        except LLMOutputError as error:
            log.warning(
                "user %s: reranker invalid_json: %s", user_key(context.user_id), describe(error)
            )
            return fall_back("requested_fallback", answered, "invalid_json")
        return Command(goto="finish", update={**answered, "answer": answer})

    return choose


def selection_update(selection: Selection, fallback: RerankFallback | None) -> dict:
    return {
        "selected_topics": selection.topics,
        "selected_people": selection.people,
        "rerank_dropped_ids": selection.dropped_ids,
        "rerank_fallback": fallback,
        "selected_by_search_order": selection.by_search_order,
    }


async def finish(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """Accept the model's choice, within the candidate sets and the limits."""
    context = runtime.context
    selection = select_answer(
        state["answer"],
        state["found"]["topics"],
        state["found"]["people"],
        max_topics=context.rerank_max_topics,
        max_people=context.tuning.rerank_max_people,
        excerpt_threshold_chars=context.tuning.excerpt_threshold_chars,
    )
    if selection.dropped_ids:
        log.info(
            "user %s: reranker named %d unknown ids",
            user_key(context.user_id),
            selection.dropped_ids,
        )
    return selection_update(selection, None)


async def vector_fallback(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """Nothing from the model to go on: the search order decides."""
    return fallback_update(state, runtime.context, requested_ids=())


async def requested_fallback(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """The model asked for content but gave no usable answer: what it asked for decides."""
    return fallback_update(state, runtime.context, requested_ids=state["requested_ids"])


def fallback_update(
    state: RerankState, context: ResponseContext, requested_ids: Sequence[int]
) -> dict:
    return fallback_of(
        state["found"]["topics"],
        state["found"]["people"],
        state["rerank_fallback"],
        context,
        requested_ids,
    )


def fallback_of(
    candidates: Sequence[TopicCandidate],
    people: Sequence[PersonCandidate],
    reason: RerankFallback,
    context: ResponseContext,
    requested_ids: Sequence[int] = (),
) -> dict:
    selection = fallback_selection(
        candidates,
        people,
        reason,
        requested_ids=requested_ids,
        max_topics=context.rerank_max_topics,
        max_people=context.tuning.rerank_max_people,
    )
    return selection_update(selection, reason)


def core_profile(deps: Deps, user_id: int) -> list[str]:
    """The user's key facts, as the model's prompt shows them."""
    return [fact["content"] for fact in deps.store.facts.core(user_id)]


def make_rerank(reranker: CompiledStateGraph):
    """The response graph's `rerank` node: the compiled subgraph on what this turn's search
    `found`, its own state mapped explicitly. Every outcome, the no-model one included, is
    an edge of the subgraph: `prepare` decides, and reads the user's profile only when a
    model is to be asked."""

    async def rerank(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        found = found_in(state)
        request = RerankInput(query=state["query"], user_message=state["text"], found=found)
        # Called here, in the node itself, so that the graph's drawing (xray) finds it.
        result = await reranker.ainvoke(request, context=runtime.context)
        RERANKER_CANDIDATES_IN.observe(len(found["topics"]))
        RERANKER_CANDIDATES_OUT.observe(len(result["selected_topics"]))
        RERANKER_SELECTED.observe(len(result["selected_topics"]))
        if result["rerank_fallback"]:
            RERANKER_FALLBACKS.labels(reason=result["rerank_fallback"]).inc()
        return {key: result[key] for key in RERANK_OUTPUT_KEYS} | {
            "repairs": result.get("repairs", [])
        }

    return rerank


RERANK_OUTPUT_KEYS = (
    "selected_topics",
    "selected_people",
    "rerank_fallback",
    "rerank_dropped_ids",
    "rerank_llm_calls",
    "selected_by_search_order",
)
