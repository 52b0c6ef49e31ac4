"""The memory-only answer: what runs when no responder model is configured or it failed.

It never composes an answer of its own: it says plainly that no language model answered
and quotes what retrieval recalled, in the user's language (Cyrillic in the message means
Russian, anything else English): the messages of the recalled topics that the context's
own ranking puts first (`nodes.response.excerpts`: the question's full-text and vector
hits, the messages beside them, the topics' rank), within `QUOTE_BUDGET_CHARS` and from
at most `MAX_QUOTED_TOPICS` topics, each topic with its date and summary; then the
messages of the current conversation (since `/new`) relevant to the question, found the
auto-RAG way but with the window included, since no model reads the window here; then
people and facts. When nothing was recalled it says so.

The recalled topics are the context's (the selection, then the other candidates when the
search order made it: `fill_candidates`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.found import FactCandidate, found_in
from core.records import MEMORY_KIND, MessageRow, PassageRow
from core.state import (
    NO_CONTEXT,
    ContextUsed,
    ResponseState,
    SelectedPerson,
    SelectedTopic,
    UsedTopic,
)
from core.text import author_name, clip, time_under
from nodes.response.auto_rag import relevant_earlier_messages
from nodes.response.ranking.recall import Recall, rank_members
from nodes.response.ranking.weights import Ranking
from nodes.response.rerank_selection import ShownTopics
from nodes.response.topic_content import topic_date
from nodes.shared.documents import with_documents

Language = Literal["ru", "en"]

QUOTE_BUDGET_CHARS = 1600
"""The quotes of recalled topics, in all: about a third of a Telegram message, so that
with the topics' dates and summaries the answer stays one message."""
MAX_QUOTED_TOPICS = 5
"""As many topics as the reranker selects by default (`TOPICA_RERANKER_MAX_TOPICS`)."""
QUOTE_CHARS = 400
SUMMARY_CHARS = 300

_CYRILLIC = re.compile(r"[\u0400-\u04FF]")


@dataclass(frozen=True)
class Wording:
    intro: str
    nothing: str
    conversation: str
    people: str
    facts: str
    user: str
    assistant: str


WORDING: dict[Language, Wording] = {
    "ru": Wording(
        intro=(
            "Сейчас я не могу сформулировать ответ сам (языковая модель недоступна), "
            "поэтому привожу то, что нашёл в памяти:"
        ),
        nothing=(
            "Языковая модель сейчас недоступна, а в памяти по этому вопросу ничего не нашлось, "
            "так что ответить не могу."
        ),
        conversation="Ранее в этом разговоре:",
        people="Люди:",
        facts="Факты:",
        user="Вы",
        assistant="Topica",
    ),
    "en": Wording(
        intro=(
            "I can't compose an answer right now (no language model is available), "
            "so here is what I found in memory:"
        ),
        nothing=(
            "No language model is available right now, and I found nothing in memory "
            "about this, so I can't answer."
        ),
        conversation="Earlier in this conversation:",
        people="People:",
        facts="Facts:",
        user="You",
        assistant="Topica",
    ),
}


def language_of(text: str) -> Language:
    return "ru" if _CYRILLIC.search(text) else "en"


def quote(
    message: MessageRow, wording: Wording, day: str | None = None, named: bool = False
) -> str:
    """A quoted message; under a topic's date (`day`) one of that day by its time alone.
    A user's message is "You", or with `named` (the quotes have several authors: an
    imported chat) its author's name, so no one else's words read as the user's."""
    who = wording.assistant if message["role"] == "assistant" else wording.user
    if named and message["role"] != "assistant":
        who = author_name(message) or who
    when = time_under(message["created_at"], day)
    return f"> {who} ({when}): {clip(message['content'], QUOTE_CHARS)}"


@dataclass(frozen=True)
class RecalledTopic:
    pick: SelectedTopic
    """How the context recalled it: its reason and score."""
    date: str
    summary: str
    quotes: list[MessageRow]
    whole: bool
    """Every message of the topic is quoted."""


def recall_topics(
    deps: Deps, context: ResponseContext, state: ResponseState
) -> list[RecalledTopic]:
    """The recalled topics whose messages the context's ranking puts first, best first,
    each with those of its messages that fit the quotes' budget, in conversation order."""
    user_id = context.user_id
    recall = Recall.of(state)
    picks = {pick["id"]: pick for pick in ShownTopics.of(state).topics}
    topics = deps.store.topics.by_ids(user_id, list(picks))
    query_vectors = [deps.embedder.encode_query(query) for query in recall.queries]
    pick_passage = partial(closest_passage, deps, user_id, query_vectors=query_vectors)
    # A topic archived before kinds existed may hold a memory-only answer: never quoted.
    members = [
        (
            topic["id"],
            with_documents(
                deps.store,
                user_id,
                [
                    m
                    for m in deps.store.messages.of_topic(user_id, topic["id"])
                    if m["kind"] == MEMORY_KIND
                ],
                pick_passage,
                inline=True,
            ),
        )
        for topic in topics
    ]
    order = rank_members(members, recall, Ranking.of(context))
    chosen = chosen_quotes(order, {m["id"]: m for _, messages in members for m in messages})
    by_id = {topic["id"]: topic for topic in topics}
    messages_of = dict(members)
    return [
        RecalledTopic(
            picks[topic_id],
            topic_date(by_id[topic_id]),
            by_id[topic_id]["summary"],
            [m for m in messages_of[topic_id] if m["id"] in ids],
            whole=len(ids) == len(messages_of[topic_id]),
        )
        for topic_id, ids in chosen.items()
    ]


def chosen_quotes(
    order: Sequence[tuple[int, int]], messages: Mapping[int, MessageRow]
) -> dict[int, set[int]]:
    """{topic id: its quoted message ids}, topics in the order their first quote ranks:
    messages taken in `order` while they fit `QUOTE_BUDGET_CHARS` (a long one that does
    not fit leaves room for shorter ones after it), from at most `MAX_QUOTED_TOPICS`."""
    chosen: dict[int, set[int]] = {}
    used = 0
    for topic_id, message_id in order:
        if topic_id not in chosen and len(chosen) == MAX_QUOTED_TOPICS:
            continue
        cost = len(clip(messages[message_id]["content"], QUOTE_CHARS))
        if used + cost > QUOTE_BUDGET_CHARS:
            continue
        chosen.setdefault(topic_id, set()).add(message_id)
        used += cost
    return chosen


def closest_passage(
    deps: Deps,
    user_id: int,
    passages: list[PassageRow],
    *,
    query_vectors: Sequence[np.ndarray],
) -> list[PassageRow]:
    """The document passage closest to the question, which its message is quoted with."""
    try:
        vectors = deps.vectors.vectors("passages", user_id, [p["id"] for p in passages])
    except VectorStoreUnavailable:  # degraded: the first passage is quoted
        vectors = {}
    scored = {
        passage_id: max(float(np.dot(vector, query)) for query in query_vectors)
        for passage_id, vector in vectors.items()
    }
    if not scored:
        return passages[:1]
    return [max(passages, key=lambda p: scored.get(p["id"], -1.0))]


def memory_answer(
    language: Language,
    topics: Sequence[RecalledTopic],
    conversation: Sequence[MessageRow],
    people: Sequence[tuple[str, str]],
    facts: Sequence[FactCandidate],
) -> str:
    """The answer text: the recalled material quoted, or that nothing was recalled."""
    wording = WORDING[language]
    if not (topics or conversation or people or facts):
        return wording.nothing
    parts = [wording.intro]
    quoted = [*(m for topic in topics for m in topic.quotes), *conversation]
    authors = {m["author"] for m in quoted if m["role"] != "assistant" and m.get("author")}
    named = len(authors) > 1
    for topic in topics:
        lines = [f"**{topic.date}** — {clip(topic.summary, SUMMARY_CHARS)}"]
        lines += [quote(message, wording, topic.date, named) for message in topic.quotes]
        parts.append("\n".join(lines))
    if conversation:
        ordered = sorted(conversation, key=seq)
        quotes = [quote(message, wording, named=named) for message in ordered]
        parts.append("\n".join([wording.conversation, *quotes]))
    if people:
        lines = [f"- {name}" + (f" — {about}" if about else "") for name, about in people]
        parts.append("\n".join([wording.people, *lines]))
    if facts:
        parts.append("\n".join([wording.facts, *(f"- {fact['content']}" for fact in facts)]))
    return "\n\n".join(parts)


def seq(message: MessageRow) -> int:
    return message["seq"]


def quoted_topics(topics: Sequence[RecalledTopic]) -> list[UsedTopic]:
    """The topics the memory-only answer quotes, as its sources: the context the answer
    never read may hold more of them (the candidates after a selection the search order
    made), and listing those would name sources it did not use."""
    return [UsedTopic(**topic.pick, cut=not topic.whole) for topic in topics]


def compose(
    deps: Deps, context: ResponseContext, state: ResponseState
) -> tuple[str, list[UsedTopic]]:
    user_id = context.user_id
    topics = recall_topics(deps, context, state)
    current = [state.get("message_id"), *(state.get("group_message_ids") or ())]
    segment = deps.store.sessions.current_segment(user_id)
    # The whole segment is searched, the user's newest messages too; those, on the chat's
    # screen, may still wait for their vectors (a window's worth, `Indexer.store_live`).
    newest = deps.store.messages.recent(user_id, context.sliding_window_messages, segment)
    conversation = relevant_earlier_messages(
        deps,
        context,
        state["text"],
        segment,
        exclude_ids={i for i in current if i is not None},
        exclude_topic_ids={topic.pick["id"] for topic in topics},
        on_screen={message["id"] for message in newest},
    )
    selected_people: Sequence[SelectedPerson] = state.get("selected_people") or []
    people = [
        (person["name"], clip(person["bio"] or "", QUOTE_CHARS))
        for person in deps.store.people.by_ids(user_id, [p["id"] for p in selected_people])
    ]
    facts = found_in(state)["facts"]
    answer = memory_answer(language_of(state["text"]), topics, conversation, people, facts)
    return answer, quoted_topics(topics)


def make_offline_answer(deps: Deps):
    async def offline_answer(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        answer, topics = await asyncio.to_thread(compose, deps, runtime.context, state)
        used = state.get("context_used") or NO_CONTEXT
        return {
            "answer": answer,
            "answered_by": "memory",
            "context_used": ContextUsed(**{**used, "topics": topics}),
        }

    return offline_answer
