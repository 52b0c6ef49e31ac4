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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
)
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from graphs.context import ResponseContext
from graphs.deps import Deps
from graphs.reranker import FallbackReason, RerankAnswer, RerankState
from graphs.state import PersonCandidate, SelectedPerson, SelectedTopic, TopicCandidate
from nodes.formatting import clip
from nodes.structured import LLMOutputError, message_text, parse_json_value
from nodes.topic_content import TOOL_NAME, size_label
from prompts import reranker as prompt
from stores.relational import RelationalStore, parse_timestamp

log = logging.getLogger(__name__)

FORCED_TOOL_CHOICE = {"type": "function", "function": {"name": TOOL_NAME}}
JSON_MODE = {"type": "json_object"}
NO_REASON = "chosen by the reranker (no reason given)"
ERROR_DETAIL_CHARS = 200


# -- prompt material ------------------------------------------------------------------


def one_line(text: str) -> str:
    return " ".join(text.split())


def format_topic_candidate(candidate: TopicCandidate) -> str:
    """`[ID:42] 2025-07-25 | 20 msgs, ~16K chars | summary` (seed 001's candidate format)."""
    return (
        f"[ID:{candidate['id']}] {candidate['date']} | {candidate['message_count']} msgs, "
        f"{size_label(candidate['size_chars'])} | {one_line(candidate['summary'])}"
    )


def format_person_candidate(person: PersonCandidate) -> str:
    """`[P:7] Name — description`."""
    description = one_line(person["description"])
    return f"[P:{person['id']}] {person['name']}" + (f" — {description}" if description else "")


def turn_date(context: ResponseContext) -> str:
    moment = parse_timestamp(context.now_iso) if context.now_iso else datetime.now(UTC)
    return moment.strftime("%Y-%m-%d %H:%M (%A)")


def build_prompt(
    state: RerankState,
    candidates: Sequence[TopicCandidate],
    people: Sequence[PersonCandidate],
    context: ResponseContext,
) -> list[BaseMessage]:
    profile = state.get("profile") or []
    system = prompt.SYSTEM.format(
        max_topics=context.rerank_max_topics,
        max_people=context.rerank_max_people,
        max_tool_calls=context.rerank_max_tool_calls,
        excerpt_threshold=context.excerpt_threshold_chars,
    )
    user = prompt.USER.format(
        date=turn_date(context),
        query=state["query"].strip(),
        user_message=state["user_message"].strip(),
        profile="\n".join(f"- {one_line(fact)}" for fact in profile) or prompt.NO_PROFILE,
        topic_count=len(candidates),
        candidates="\n".join(map(format_topic_candidate, candidates)) or prompt.NO_TOPICS,
        people_count=len(people),
        people="\n".join(map(format_person_candidate, people)) or prompt.NO_PEOPLE,
    )
    return [SystemMessage(system), HumanMessage(user)]


# -- the model's replies --------------------------------------------------------------


class TopicChoice(BaseModel):
    id: int
    reason: str = ""
    excerpt: str | None = None


class PersonChoice(BaseModel):
    id: int
    reason: str = ""


class FinalAnswer(BaseModel):
    """The final JSON; bare ids (`[42, 18]` or `{"topics": [42, 18]}`) are the old form."""

    topics: list[TopicChoice] = Field(default_factory=list)
    people: list[PersonChoice] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _old_list_form(cls, value: object) -> object:
        if isinstance(value, list):
            return {"topics": value}
        if isinstance(value, dict) and not {"topics", "people"} & value.keys():
            raise ValueError('expected "topics" and/or "people"')
        return value

    @field_validator("topics", "people", mode="before")
    @classmethod
    def _bare_ids(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, list):
            return [{"id": item} if isinstance(item, int | str) else item for item in value]
        return value


def parse_answer(text: str) -> RerankAnswer:
    """The final answer from the model's text; raises LLMOutputError when it is unusable."""
    try:
        answer = FinalAnswer.model_validate(parse_json_value(text))
    except ValidationError as error:
        raise LLMOutputError(f"reranker answer does not match the format: {error}") from error
    return RerankAnswer(
        topics=[
            {"id": topic.id, "reason": topic.reason.strip(), "excerpt": topic.excerpt}
            for topic in answer.topics
        ],
        people=[{"id": person.id, "reason": person.reason.strip()} for person in answer.people],
    )


def content_calls(reply: AIMessage) -> list[ToolCall]:
    return [call for call in reply.tool_calls if call["name"] == TOOL_NAME]


def requested_topic_ids(reply: AIMessage) -> list[int]:
    """Topic ids the reply asks to load, in the order asked (malformed ids skipped)."""
    ids: list[int] = []
    for call in content_calls(reply):
        raw = call["args"].get("ids")
        for value in raw if isinstance(raw, list) else []:
            if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
                ids.append(int(value))
    return ids


# -- candidates and selections -------------------------------------------------------


def owned_candidates(
    store: RelationalStore,
    user_id: int,
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
) -> tuple[list[TopicCandidate], list[PersonCandidate]]:
    """Only the candidates that are this user's topics and people, in their order.

    Search already filters by user; this keeps a stale id (a topic merged away since) or
    a forged one from reaching the model's prompt or the selection.
    """
    topic_ids = {row["id"] for row in store.topics_by_ids(user_id, [c["id"] for c in candidates])}
    person_ids = {
        row["id"] for row in store.people_by_ids(user_id, [p["id"] for p in people_candidates])
    }
    return (
        [candidate for candidate in candidates if candidate["id"] in topic_ids],
        [person for person in people_candidates if person["id"] in person_ids],
    )


@dataclass(frozen=True)
class Selection:
    topics: list[SelectedTopic]
    people: list[SelectedPerson]
    dropped_ids: int


def select_answer(
    answer: RerankAnswer,
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
    *,
    max_topics: int,
    max_people: int,
    excerpt_threshold_chars: int,
) -> Selection:
    """The model's choice within the candidate sets and limits.

    Ids outside the candidate sets are dropped and counted; repeats are ignored; an
    excerpt is kept only for a topic larger than the threshold (smaller ones are used whole).
    """
    topics_by_id = {candidate["id"]: candidate for candidate in candidates}
    people_ids = {person["id"] for person in people_candidates}
    dropped = 0
    topics: dict[int, SelectedTopic] = {}
    for pick in answer["topics"]:
        candidate = topics_by_id.get(pick["id"])
        if candidate is None:
            dropped += 1
        elif pick["id"] not in topics and len(topics) < max_topics:
            excerpt = (pick["excerpt"] or "").strip()
            keep_excerpt = excerpt and candidate["size_chars"] > excerpt_threshold_chars
            topics[pick["id"]] = SelectedTopic(
                id=pick["id"],
                reason=pick["reason"] or NO_REASON,
                excerpt=excerpt if keep_excerpt else None,
                score=candidate["score"],
            )
    people: dict[int, SelectedPerson] = {}
    for pick in answer["people"]:
        if pick["id"] not in people_ids:
            dropped += 1
        elif pick["id"] not in people and len(people) < max_people:
            people[pick["id"]] = SelectedPerson(id=pick["id"], reason=pick["reason"] or NO_REASON)
    return Selection(list(topics.values()), list(people.values()), dropped)


def vector_people(
    people_candidates: Sequence[PersonCandidate], reason: str, max_people: int
) -> list[SelectedPerson]:
    return [
        SelectedPerson(id=person["id"], reason=f"vector order ({reason})")
        for person in people_candidates[:max_people]
    ]


def vector_selection(
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
    reason: str,
    *,
    max_topics: int,
    max_people: int,
) -> Selection:
    """The top candidates in search order (they arrive sorted by fused score)."""
    topics = [
        SelectedTopic(
            id=candidate["id"],
            reason=f"vector order ({reason})",
            excerpt=None,
            score=candidate["score"],
        )
        for candidate in candidates[:max_topics]
    ]
    return Selection(topics, vector_people(people_candidates, reason, max_people), 0)


def requested_selection(
    requested_ids: Sequence[int],
    candidates: Sequence[TopicCandidate],
    people_candidates: Sequence[PersonCandidate],
    reason: str,
    *,
    max_topics: int,
    max_people: int,
) -> Selection:
    """The first topics the model asked to load, in the order asked (seed: it puts the
    most relevant first); the vector order when none of them was a candidate."""
    topics_by_id = {candidate["id"]: candidate for candidate in candidates}
    unique_ids = list(dict.fromkeys(requested_ids))
    known = [topic_id for topic_id in unique_ids if topic_id in topics_by_id]
    dropped = len(unique_ids) - len(known)
    if not known:
        fallback = vector_selection(
            candidates, people_candidates, reason, max_topics=max_topics, max_people=max_people
        )
        return Selection(fallback.topics, fallback.people, dropped)
    topics = [
        SelectedTopic(
            id=topic_id,
            reason=f"requested by the reranker ({reason})",
            excerpt=None,
            score=topics_by_id[topic_id]["score"],
        )
        for topic_id in known[:max_topics]
    ]
    return Selection(topics, vector_people(people_candidates, reason, max_people), dropped)


def selection_update(selection: Selection, fallback: FallbackReason | None) -> dict:
    return {
        "selected_topics": selection.topics,
        "selected_people": selection.people,
        "rerank_dropped_ids": selection.dropped_ids,
        "rerank_fallback": fallback,
    }


# -- time budget ----------------------------------------------------------------------


def remaining_budget(started_at: float, timeout_s: float, now: float) -> float:
    return timeout_s - (now - started_at)


def is_timeout(error: BaseException) -> bool:
    return isinstance(error, TimeoutError | openai.APITimeoutError)


async def invoke_within_budget(
    model: Runnable[list[BaseMessage], BaseMessage],
    messages: list[BaseMessage],
    state: RerankState,
    context: ResponseContext,
) -> AIMessage:
    """The model's reply, cut off when the run's budget runs out (raises TimeoutError)."""
    left = remaining_budget(state["started_at"], context.rerank_timeout_s, time.monotonic())
    if left <= 0:
        raise TimeoutError("the reranker's time budget was spent before this call")
    return await asyncio.wait_for(model.ainvoke(messages), timeout=left)


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {clip(str(error), ERROR_DETAIL_CHARS)}"


# -- nodes ----------------------------------------------------------------------------


def make_prepare(deps: Deps):
    async def prepare(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["request_content", "vector_fallback"]]:
        started_at = time.monotonic()
        context = runtime.context
        offered_people = state.get("people_candidates") or []
        candidates, people = await asyncio.to_thread(
            owned_candidates, deps.store, context.user_id, state["candidates"], offered_people
        )
        ignored = len(state["candidates"]) - len(candidates) + len(offered_people) - len(people)
        if ignored:
            log.warning("user %s: reranker ignored %d foreign candidates", context.user_id, ignored)
        fresh = {
            "started_at": started_at,
            "candidates": candidates,
            "people_candidates": people,
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
            "requested_ids": [],
            "tool_calls": 0,
            "rerank_llm_calls": 0,
            "rerank_dropped_ids": 0,
            "rerank_fallback": None,
            "selected_topics": [],
            "selected_people": [],
        }
        if not candidates:
            reason: FallbackReason | None = "no_candidates"
        elif deps.models.get("reranker") is None:
            reason = "no_model"
        else:
            reason = None
        if reason is not None:
            return Command(goto="vector_fallback", update={**fresh, "rerank_fallback": reason})
        prompt_messages = build_prompt(state, candidates, people, context)
        return Command(
            goto="request_content",
            update={**fresh, "messages": [*fresh["messages"], *prompt_messages]},
        )

    return prepare


def make_request_content(deps: Deps, content_tool: BaseTool):
    """Turn 1: the model must call `get_topics_content` (tool_choice; no response_format,
    which some providers refuse together with a forced tool)."""

    async def request_content(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["load_content", "vector_fallback"]]:
        context = runtime.context
        model: BaseChatModel = deps.models.get("reranker")
        calls = state["rerank_llm_calls"] + 1
        try:
            bound = model.bind_tools([content_tool], tool_choice=FORCED_TOOL_CHOICE)
            reply = await invoke_within_budget(bound, state["messages"], state, context)
        except Exception as error:  # the provider's failure is a fallback edge, not a crash
            reason: FallbackReason = "timeout_before_tool" if is_timeout(error) else "api_error"
            log.warning("user %s: reranker %s: %s", context.user_id, reason, describe(error))
            return Command(
                goto="vector_fallback",
                update={"rerank_fallback": reason, "rerank_llm_calls": calls},
            )
        answered = {"messages": [reply], "rerank_llm_calls": calls}
        if not content_calls(reply):
            return Command(
                goto="vector_fallback", update={**answered, "rerank_fallback": "protocol_violation"}
            )
        return Command(
            goto="load_content",
            update={
                **answered,
                "requested_ids": [*state["requested_ids"], *requested_topic_ids(reply)],
                "tool_calls": state["tool_calls"] + 1,
            },
        )

    return request_content


def make_choose(deps: Deps, content_tool: BaseTool):
    """Turn 2: the final JSON (response_format json_object). The tool stays bound, unforced,
    so the model may load more content, up to `rerank_max_tool_calls` calls in all.

    The tool is bound `strict`: with a response_format, ChatOpenAI sends the request through
    the SDK's `parse`, which accepts strict function tools only.
    """

    async def choose(
        state: RerankState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["finish", "load_content", "requested_fallback"]]:
        context = runtime.context
        model: BaseChatModel = deps.models.get("reranker")
        calls = state["rerank_llm_calls"] + 1
        try:
            bound = model.bind_tools([content_tool], strict=True).bind(response_format=JSON_MODE)
            reply = await invoke_within_budget(bound, state["messages"], state, context)
        except Exception as error:  # after a tool call, the requested ids are the fallback
            reason: FallbackReason = "timeout_after_tool" if is_timeout(error) else "api_error"
            log.warning("user %s: reranker %s: %s", context.user_id, reason, describe(error))
            return Command(
                goto="requested_fallback",
                update={"rerank_fallback": reason, "rerank_llm_calls": calls},
            )
        answered = {"messages": [reply], "rerank_llm_calls": calls}
        if content_calls(reply):
            tool_calls = state["tool_calls"] + 1
            if tool_calls > context.rerank_max_tool_calls:
                return Command(
                    goto="requested_fallback",
                    update={**answered, "rerank_fallback": "tool_call_limit"},
                )
            return Command(
                goto="load_content",
                update={
                    **answered,
                    "requested_ids": [*state["requested_ids"], *requested_topic_ids(reply)],
                    "tool_calls": tool_calls,
                },
            )
        try:
            answer = parse_answer(message_text(reply))
        except LLMOutputError as error:
            log.warning("user %s: reranker invalid_json: %s", context.user_id, describe(error))
            return Command(
                goto="requested_fallback", update={**answered, "rerank_fallback": "invalid_json"}
            )
        return Command(goto="finish", update={**answered, "answer": answer})

    return choose


async def finish(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """Accept the model's choice, within the candidate sets and the limits."""
    context = runtime.context
    selection = select_answer(
        state["answer"],
        state["candidates"],
        state.get("people_candidates") or [],
        max_topics=context.rerank_max_topics,
        max_people=context.rerank_max_people,
        excerpt_threshold_chars=context.excerpt_threshold_chars,
    )
    if selection.dropped_ids:
        log.info("user %s: reranker named %d unknown ids", context.user_id, selection.dropped_ids)
    return selection_update(selection, None)


async def vector_fallback(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """Nothing from the model to go on: the search order decides."""
    reason = state["rerank_fallback"]
    context = runtime.context
    log.info("user %s: reranker fallback to vector order (%s)", context.user_id, reason)
    selection = vector_selection(
        state["candidates"],
        state.get("people_candidates") or [],
        reason,
        max_topics=context.rerank_max_topics,
        max_people=context.rerank_max_people,
    )
    return selection_update(selection, reason)


async def requested_fallback(state: RerankState, runtime: Runtime[ResponseContext]) -> dict:
    """The model asked for content but gave no usable answer: what it asked for decides."""
    reason = state["rerank_fallback"]
    context = runtime.context
    log.info("user %s: reranker fallback to requested ids (%s)", context.user_id, reason)
    selection = requested_selection(
        state["requested_ids"],
        state["candidates"],
        state.get("people_candidates") or [],
        reason,
        max_topics=context.rerank_max_topics,
        max_people=context.rerank_max_people,
    )
    return selection_update(selection, reason)
