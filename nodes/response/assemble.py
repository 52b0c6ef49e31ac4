"""Assemble: the responder's context, layer by layer, each within its token budget.

The layers, in the seeds' order (002-004): the system prompt with the date and the core
identity facts; the rolling summary of the session's older unarchived messages; the
auto-RAG block "From earlier in this conversation"; the recalled topics (content, or the
reranker's excerpt of a large topic); people; other relevant facts; the sliding window of
recent messages; the current message. Layers 1-6 form the system message, the window and
the current message follow as chat turns. Summary and auto-RAG exist only once the
segment (since the last `/new`) is longer than the window, and auto-RAG's tokens are
taken out of the window's budget (seed 004).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.ports import Store
from core.records import FactRow, MessageRow
from core.state import FactCandidate, ResponseState, SelectedPerson, SelectedTopic
from core.text import transcript
from nodes.response.auto_rag import relevant_earlier_messages
from nodes.response.excerpts import relevant_excerpts
from nodes.response.search import person_description
from nodes.response.session_summary import SessionView, session_view
from nodes.response.topic_content import render_topics_content
from nodes.shared.budget import (
    CHARS_PER_TOKEN,
    lines_within,
    message_tokens,
    tokens,
    truncate_to_tokens,
)
from nodes.shared.clock import prompt_date, turn_moment
from prompts import responder as prompt

# Room left in the topics budget for the section's own wording and the reasons' framing.
TOPICS_FRAME_TOKENS = 60


def system_prompt(core_facts: Sequence[FactRow], context: ResponseContext) -> str:
    """The base prompt with the date and as many core facts as the system budget holds."""
    date = prompt_date(turn_moment(context))
    base = prompt.SYSTEM.format(date=date, profile="")
    lines = [f"- [{fact['id']}] {fact['content']}" for fact in core_facts]
    kept = lines_within(lines, context.system_budget_tokens - tokens(base))
    return prompt.SYSTEM.format(date=date, profile="\n".join(kept) or prompt.NO_PROFILE)


def summary_section(summary: str, budget: int) -> str:
    frame = tokens(prompt.SUMMARY_SECTION.format(summary=""))
    return prompt.SUMMARY_SECTION.format(summary=truncate_to_tokens(summary, budget - frame))


def auto_rag_section(messages: Sequence[MessageRow], budget: int) -> str:
    """The best hits that fit the budget whole, shown in conversation order."""
    frame = tokens(prompt.AUTO_RAG_SECTION.format(messages=""))
    lines = lines_within([transcript([m]) for m in messages], budget - frame)
    if not lines:
        return ""
    kept = sorted(messages[: len(lines)], key=lambda m: m["seq"])
    return prompt.AUTO_RAG_SECTION.format(messages=transcript(kept))


def topics_section(
    store: Store,
    user_id: int,
    selected: Sequence[SelectedTopic],
    budget: int,
    message_hits: Sequence[Sequence[int]] = (),
    rrf_k: int = 60,
) -> str:
    """The recalled topics with the reranker's reasons, within `budget` tokens.

    Topics that fit are shown whole; when they do not all fit, each is cut to its
    messages most relevant to the turn (`nodes.excerpts`, ranked with `message_hits`),
    so the room goes to the answer-bearing messages of every topic rather than to the
    first topics' opening lines.
    """
    if not selected:
        return ""
    reasons = "\n".join(f"- Topic {topic['id']}: {topic['reason']}" for topic in selected)
    max_chars = max(0, budget - tokens(reasons) - TOPICS_FRAME_TOKENS) * CHARS_PER_TOKEN
    topic_ids = [topic["id"] for topic in selected]
    excerpts = {topic["id"]: topic["excerpt"] for topic in selected if topic["excerpt"]}
    content = render_topics_content(store, user_id, topic_ids, excerpts=excerpts)
    if len(content) > max_chars:
        topic_ids, excerpts = relevant_excerpts(
            store, user_id, topic_ids, message_hits, max_chars, rrf_k, given=excerpts
        )
        content = render_topics_content(
            store, user_id, topic_ids, excerpts=excerpts, max_chars=max_chars
        )
    section = prompt.TOPICS_SECTION.format(reasons=reasons, content=content)
    return truncate_to_tokens(section, budget)


def people_section(
    store: Store, user_id: int, selected: Sequence[SelectedPerson], budget: int
) -> str:
    reasons = {person["id"]: person["reason"] for person in selected}
    people = store.people.by_ids(user_id, list(reasons))
    lines = []
    for person in people:
        description = person_description(person["circle"], person["aliases"], person["bio"])
        detail = f" ({description})" if description else ""
        lines.append(f"- {person['name']}{detail} — {reasons[person['id']]}")
    frame = tokens(prompt.PEOPLE_SECTION.format(people=""))
    kept = lines_within(lines, budget - frame)
    return prompt.PEOPLE_SECTION.format(people="\n".join(kept)) if kept else ""


def facts_section(candidates: Sequence[FactCandidate], core_ids: set[int], budget: int) -> str:
    lines = [
        f"- [{fact['id']}] {fact['type']}, {fact['importance']}: {fact['content']}"
        for fact in candidates
        if fact["id"] not in core_ids
    ]
    frame = tokens(prompt.FACTS_SECTION.format(facts=""))
    kept = lines_within(lines, budget - frame)
    return prompt.FACTS_SECTION.format(facts="\n".join(kept)) if kept else ""


def chat_turn(message: MessageRow) -> BaseMessage:
    if message["role"] == "assistant":
        return AIMessage(message["content"])
    return HumanMessage(message["content"])


def window_turns(window: Sequence[MessageRow], budget: int) -> list[BaseMessage]:
    """The newest window messages that fit the budget; the oldest go first."""
    turns = [chat_turn(message) for message in window]
    while turns and message_tokens(turns) > budget:
        turns.pop(0)
    return turns


def recalled_sections(
    store: Store,
    user_id: int,
    state: ResponseState,
    core_ids: set[int],
    context: ResponseContext,
) -> list[tuple[str, str]]:
    """Layers 4-6: what the reranker chose and the relevant facts, as (layer, text)."""
    return [
        (
            "topics",
            topics_section(
                store,
                user_id,
                state.get("selected_topics") or [],
                context.topics_budget_tokens,
                state.get("message_hits") or [],
                context.rrf_k,
            ),
        ),
        (
            "people",
            people_section(
                store, user_id, state.get("selected_people") or [], context.people_budget_tokens
            ),
        ),
        (
            "facts",
            facts_section(
                state.get("fact_candidates") or [], core_ids, context.facts_budget_tokens
            ),
        ),
    ]


def make_assemble(deps: Deps):
    store = deps.store

    async def session_sections(
        state: ResponseState, context: ResponseContext, view: SessionView
    ) -> list[tuple[str, str]]:
        """Layers 2-3, only for a segment longer than the window (seeds 003, 004)."""
        if not view.longer_than_window:
            return []
        summary = state.get("session_summary")
        shown = {message["id"] for message in view.window}
        if state.get("message_id") is not None:
            shown.add(state["message_id"])
        recalled = {topic["id"] for topic in state.get("selected_topics") or []}
        earlier = await asyncio.to_thread(
            relevant_earlier_messages, deps, context, state["text"], view.segment, shown, recalled
        )
        return [
            ("summary", summary_section(summary, context.summary_budget_tokens) if summary else ""),
            ("auto_rag", auto_rag_section(earlier, context.auto_rag_budget_tokens)),
        ]

    async def assemble(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        context = runtime.context
        user_id = context.user_id
        view = await asyncio.to_thread(
            session_view, store, user_id, state.get("message_id"), context.sliding_window_messages
        )
        core_facts = await asyncio.to_thread(store.facts.core, user_id)
        system = system_prompt(core_facts, context)
        sections = await session_sections(state, context, view)
        sections += await asyncio.to_thread(
            recalled_sections, store, user_id, state, {f["id"] for f in core_facts}, context
        )
        included = [(name, text) for name, text in sections if text]
        layers = {"system": tokens(system), **{name: tokens(text) for name, text in included}}
        system_message = SystemMessage("\n\n".join([system, *(text for _, text in included)]))

        window = window_turns(view.window, context.window_budget_tokens - layers.get("auto_rag", 0))
        if window:
            layers["window"] = message_tokens(window)
        text = truncate_to_tokens(state["text"], context.current_message_budget_tokens)
        parts = state.get("parts") or []
        current = HumanMessage([{"type": "text", "text": text}, *parts] if parts else text)
        layers["current"] = tokens(text)
        messages = [system_message, *window, current]
        return {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages],
            "context_layers": layers,
            "context_tokens": message_tokens(messages),
            "tool_rounds": 0,
            "empty_replies": 0,
            "respond_fallback": None,
            "respond_error": None,
            "answer": "",
            "sanitized": [],
        }

    return assemble
