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
from functools import partial
from typing import Generic, NamedTuple, TypeVar

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
from core.found import FactCandidate, found_in
from core.ports import Embedder, Store
from core.records import FactRow, MessageRow
from core.state import (
    ContextUsed,
    ResponseState,
    SelectedPerson,
    SelectedTopic,
    UsedFact,
    UsedTopic,
)
from core.text import neutralize, transcript
from nodes.response.auto_rag import relevant_earlier_messages
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.feedback import MessageVectors
from nodes.response.ranking.recall import Recall
from nodes.response.ranking.weights import Ranking
from nodes.response.rerank_selection import ShownTopics
from nodes.response.session_summary import SessionView, current_view
from nodes.response.topic_content import person_description, render_topics_content
from nodes.shared.budget import (
    CHARS_PER_TOKEN,
    lines_within,
    message_tokens,
    tokens,
    truncate_to_tokens,
)
from nodes.shared.clock import prompt_date, turn_moment
from prompts import responder as prompt

NOTHING_RECALLED = Recall()

# Room left in the topics budget for the section's own wording and the reasons' framing.
TOPICS_FRAME_TOKENS = 60

T = TypeVar("T")


class Layer(NamedTuple, Generic[T]):
    """A layer of the context: its text, and the records of memory it holds (what the
    answer's sources list)."""

    text: str
    used: list[T]


def system_prompt(core_facts: Sequence[FactRow], context: ResponseContext) -> Layer[int]:
    """The base prompt with the date and as many core facts as the system budget holds."""
    date = prompt_date(turn_moment(context))
    base = prompt.SYSTEM.format(date=date, profile="")
    lines = [f"- [{fact['id']}] {neutralize(fact['content'])}" for fact in core_facts]
    kept = lines_within(lines, context.budgets.system - tokens(base))
    text = prompt.SYSTEM.format(date=date, profile="\n".join(kept) or prompt.NO_PROFILE)
    return Layer(text, [fact["id"] for fact in core_facts[: len(kept)]])


def summary_section(summary: str, budget: int) -> str:
    frame = tokens(prompt.SUMMARY_SECTION.format(summary=""))
    return prompt.SUMMARY_SECTION.format(
        summary=truncate_to_tokens(neutralize(summary), budget - frame)
    )


def auto_rag_section(messages: Sequence[MessageRow], budget: int) -> Layer[int]:
    """The best hits that fit the budget whole, shown in conversation order."""
    frame = tokens(prompt.AUTO_RAG_SECTION.format(messages=""))
    lines = lines_within([transcript([m]) for m in messages], budget - frame)
    if not lines:
        return Layer("", [])
    kept = sorted(messages[: len(lines)], key=lambda m: m["seq"])
    text = prompt.AUTO_RAG_SECTION.format(messages=transcript(kept))
    return Layer(text, [message["id"] for message in kept])


def topics_section(
    store: Store,
    user_id: int,
    shown: ShownTopics,
    budget: int,
    recall: Recall = NOTHING_RECALLED,
    ranking: Ranking | None = None,
) -> Layer[UsedTopic]:
    """The recalled topics with the reranker's reasons, within `budget` tokens.

    Topics that fit are shown whole; when they do not all fit, each is cut to its
    messages most relevant to the turn (`relevant_excerpts`, ranked by `recall` under
    `ranking`; None: the packaged profile's), so the room goes to the answer-bearing
    messages of every topic rather than to the first topics' opening lines. `shown.more`
    are topics after the selection whose messages compete for the same room, ranked below
    it; they have no reason line.
    """
    selected, more = shown.chosen, shown.more
    if not selected:
        return Layer("", [])
    reasons = reason_lines(selected)
    max_chars = max(0, budget - tokens(reasons) - TOPICS_FRAME_TOKENS) * CHARS_PER_TOKEN
    recalled = shown.topics
    topic_ids = [topic["id"] for topic in recalled]
    given = {topic["id"]: topic["excerpt"] for topic in selected if topic["excerpt"]}
    excerpts = given
    fits = True
    if more:
        # The user's own topics alone (a state edited in Studio may name anyone's), and
        # rendering them whole only when their stored sizes say they may fit.
        sizes = {t["id"]: t["size_chars"] for t in store.topics.by_ids(user_id, topic_ids)}
        topic_ids = [topic_id for topic_id in topic_ids if topic_id in sizes]
        fits = sum(sizes.values()) <= max_chars
    content = render_topics_content(store, user_id, topic_ids, excerpts=excerpts) if fits else None
    if content is None or len(content) > max_chars:
        topic_ids, excerpts = relevant_excerpts(
            store, user_id, topic_ids, recall, ranking or Ranking(), max_chars, given
        )
        content = render_topics_content(
            store, user_id, topic_ids, excerpts=excerpts, max_chars=max_chars
        )
    section = prompt.TOPICS_SECTION.format(reasons=reasons, content=content)
    picks = {topic["id"]: topic for topic in recalled}
    used = [
        UsedTopic(**picks[topic_id], cut=topic_id in excerpts and topic_id not in given)
        for topic_id in topic_ids
    ]
    return Layer(truncate_to_tokens(section, budget), used)


def reason_lines(selected: Sequence[SelectedTopic]) -> str:
    """One line a reason, naming the topics it was given for: "- Topic 4: …", or
    "- Topics 1, 2, 3: vector order (no_model)" for a selection the search order made."""
    by_reason: dict[str, list[int]] = {}
    for topic in selected:
        by_reason.setdefault(neutralize(topic["reason"]), []).append(topic["id"])
    return "\n".join(
        f"- Topic {ids[0]}: {reason}"
        if len(ids) == 1
        else f"- Topics {', '.join(map(str, ids))}: {reason}"
        for reason, ids in by_reason.items()
    )


def people_section(
    store: Store, user_id: int, selected: Sequence[SelectedPerson], budget: int
) -> Layer[SelectedPerson]:
    reasons = {person["id"]: person["reason"] for person in selected}
    people = store.people.by_ids(user_id, list(reasons))
    lines = []
    for person in people:
        description = person_description(person["circle"], person["aliases"], person["bio"])
        detail = f" ({description})" if description else ""
        reason = neutralize(reasons[person["id"]])
        lines.append(f"- {neutralize(person['name'] + detail)} — {reason}")
    frame = tokens(prompt.PEOPLE_SECTION.format(people=""))
    kept = lines_within(lines, budget - frame)
    if not kept:
        return Layer("", [])
    used = [SelectedPerson(id=p["id"], reason=reasons[p["id"]]) for p in people[: len(kept)]]
    return Layer(prompt.PEOPLE_SECTION.format(people="\n".join(kept)), used)


def facts_section(
    candidates: Sequence[FactCandidate], core_ids: set[int], budget: int
) -> Layer[int]:
    facts = [fact for fact in candidates if fact["id"] not in core_ids]
    lines = [
        f"- [{fact['id']}] {fact['type']}, {fact['importance']}: {neutralize(fact['content'])}"
        for fact in facts
    ]
    frame = tokens(prompt.FACTS_SECTION.format(facts=""))
    kept = lines_within(lines, budget - frame)
    if not kept:
        return Layer("", [])
    text = prompt.FACTS_SECTION.format(facts="\n".join(kept))
    return Layer(text, [fact["id"] for fact in facts[: len(kept)]])


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
    embedder: Embedder | None = None,
    vectors: MessageVectors | None = None,
) -> list[tuple[str, Layer]]:
    """Layers 4-6: what the reranker chose and the relevant facts, as (name, layer);
    with `embedder`, long messages are shown by their passages most like the queries, and
    with the messages' `vectors` too the ranking takes feedback from its first messages."""
    recall = Recall.of(state, embedder, vectors)
    shown = ShownTopics.of(state)
    ranking = Ranking.of(context)
    return [
        ("topics", topics_section(store, user_id, shown, context.budgets.topics, recall, ranking)),
        (
            "people",
            people_section(
                store, user_id, state.get("selected_people") or [], context.budgets.people
            ),
        ),
        (
            "facts",
            facts_section(found_in(state)["facts"], core_ids, context.budgets.facts),
        ),
    ]


def used_context(included: dict[str, Layer], core_used: Sequence[int]) -> ContextUsed:
    """What the context's layers hold (`included`, the non-empty ones), with the core facts
    the system prompt quoted."""
    used = {name: layer.used for name, layer in included.items()}
    return ContextUsed(
        topics=used.get("topics", []),
        people=used.get("people", []),
        facts=[
            *(UsedFact(id=fact_id, core=True) for fact_id in core_used),
            *(UsedFact(id=fact_id, core=False) for fact_id in used.get("facts", [])),
        ],
        earlier_messages=used.get("auto_rag", []),
        session_summary="summary" in included,
    )


def make_assemble(deps: Deps):
    store = deps.store

    async def session_sections(
        state: ResponseState, context: ResponseContext, view: SessionView
    ) -> list[tuple[str, Layer]]:
        """Layers 2-3, only for a segment longer than the window (seeds 003, 004)."""
        if not view.longer_than_window:
            return []
        summary = state.get("session_summary")
        shown = {message["id"] for message in view.window}
        shown.update(state.get("group_message_ids") or ())
        if state.get("message_id") is not None:
            shown.add(state["message_id"])
        recalled = {topic["id"] for topic in state.get("selected_topics") or []}
        earlier = await asyncio.to_thread(
            relevant_earlier_messages, deps, context, state["text"], view.segment, shown, recalled
        )
        summary_text = summary_section(summary, context.budgets.summary) if summary else ""
        return [
            ("summary", Layer(summary_text, [])),
            ("auto_rag", auto_rag_section(earlier, context.budgets.auto_rag)),
        ]

    async def assemble(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        context = runtime.context
        user_id = context.user_id
        view = await asyncio.to_thread(current_view, deps, state, context)
        core_facts = await asyncio.to_thread(store.facts.core, user_id)
        system, core_used = system_prompt(core_facts, context)
        sections = await session_sections(state, context, view)
        sections += await asyncio.to_thread(
            recalled_sections,
            store,
            user_id,
            state,
            {f["id"] for f in core_facts},
            context,
            deps.embedder,
            partial(deps.indexer.message_vectors, user_id),
        )
        included = {name: layer for name, layer in sections if layer.text}
        layers = {
            "system": tokens(system),
            **{name: tokens(layer.text) for name, layer in included.items()},
        }
        system_message = SystemMessage(
            "\n\n".join([system, *(layer.text for layer in included.values())])
        )
        context_used = used_context(included, core_used)
        window = window_turns(view.window, context.budgets.window - layers.get("auto_rag", 0))
        if window:
            layers["window"] = message_tokens(window)
        text = truncate_to_tokens(state["text"], context.budgets.current_message)
        parts = state.get("parts") or []
        current = HumanMessage([{"type": "text", "text": text}, *parts] if parts else text)
        layers["current"] = tokens(text)
        messages = [system_message, *window, current]
        return {
            "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages],
            "context_layers": layers,
            "context_tokens": message_tokens(messages),
            "context_used": context_used,
            "tool_rounds": 0,
            "empty_replies": 0,
            "respond_fallback": None,
            "respond_error": None,
            "answer": "",
            "answer_partial": False,
            "sanitized": [],
        }

    return assemble
