"""The memory-only answer: what runs when no responder model is configured or it failed.

It never composes an answer of its own: it says plainly that no language model answered
and quotes what retrieval recalled, in the user's language (Cyrillic in the message means
Russian, anything else English): each selected topic with its date and summary and the
one to three of its messages most similar to the question; then the messages of the
current conversation (since `/new`) relevant to the question, found the auto-RAG way but
with the window included, since no model reads the window here; then people and facts.
When nothing was recalled it says so.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.records import MEMORY_KIND, MessageRow, PassageRow
from core.state import (
    NO_CONTEXT,
    ContextUsed,
    FactCandidate,
    ResponseState,
    SelectedPerson,
    SelectedTopic,
    UsedTopic,
)
from core.text import clip, short_time
from nodes.response.auto_rag import relevant_earlier_messages
from nodes.response.search import VectorReads, search_queries
from nodes.response.topic_content import topic_date
from nodes.shared.documents import with_documents

Language = Literal["ru", "en"]

MAX_QUOTES_PER_TOPIC = 3
QUOTE_SIMILARITY_MARGIN = 0.10
"""Quotes after the best one must be at most this much less similar to the question."""
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


def best_quotes(messages: Sequence[MessageRow], similarity: dict[int, float]) -> list[MessageRow]:
    """The 1-3 messages most similar to the question, in conversation order."""
    scored = sorted(
        (m for m in messages if m["id"] in similarity), key=lambda m: -similarity[m["id"]]
    )
    if not scored:
        return list(messages[:1])
    best = similarity[scored[0]["id"]]
    chosen = [m for m in scored if similarity[m["id"]] >= best - QUOTE_SIMILARITY_MARGIN]
    return sorted(chosen[:MAX_QUOTES_PER_TOPIC], key=lambda m: m["seq"])


def quote(message: MessageRow, wording: Wording) -> str:
    who = wording.assistant if message["role"] == "assistant" else wording.user
    when = short_time(message["created_at"])
    return f"> {who} ({when}): {clip(message['content'], QUOTE_CHARS)}"


@dataclass(frozen=True)
class RecalledTopic:
    id: int
    date: str
    summary: str
    quotes: list[MessageRow]
    whole: bool
    """Every message of the topic is quoted."""


def recall_topics(
    deps: Deps, user_id: int, selected: Sequence[SelectedTopic], queries: Sequence[str]
) -> list[RecalledTopic]:
    """The selected topics in rank order, each with its messages closest to the question."""
    query_vectors = [deps.embedder.encode_query(query) for query in queries]
    recalled = []
    for topic in deps.store.topics.by_ids(user_id, [t["id"] for t in selected]):
        # A topic archived before kinds existed may hold a memory-only answer: never quoted.
        messages = [
            m
            for m in deps.store.messages.of_topic(user_id, topic["id"])
            if m["kind"] == MEMORY_KIND
        ]
        vectors = VectorReads(deps.vectors, user_id).message_vectors(deps.embedder, messages)
        similarity = {
            message_id: max(float(np.dot(vector, query)) for query in query_vectors)
            for message_id, vector in vectors.items()
        }
        messages = with_documents(
            deps.store,
            user_id,
            messages,
            partial(
                closest_passage, deps, user_id, query_vectors=query_vectors, similarity=similarity
            ),
            inline=True,
        )
        quotes = best_quotes(messages, similarity)
        recalled.append(
            RecalledTopic(
                topic["id"],
                topic_date(topic),
                topic["summary"],
                quotes,
                whole=len(quotes) == len(messages),
            )
        )
    return recalled


def closest_passage(
    deps: Deps,
    user_id: int,
    passages: list[PassageRow],
    *,
    query_vectors: Sequence[np.ndarray],
    similarity: dict[int, float],
) -> list[PassageRow]:
    """The document passage closest to the question, which its message is quoted with
    (its similarity becoming the message's, so a document can be the best quote)."""
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
    best = max(passages, key=lambda p: scored.get(p["id"], -1.0))
    message_id = best["message_id"]
    similarity[message_id] = max(scored[best["id"]], similarity.get(message_id, -1.0))
    return [best]


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
    for topic in topics:
        lines = [f"**{topic.date}** — {clip(topic.summary, SUMMARY_CHARS)}"]
        lines += [quote(message, wording) for message in topic.quotes]
        parts.append("\n".join(lines))
    if conversation:
        quotes = [quote(message, wording) for message in sorted(conversation, key=seq)]
        parts.append("\n".join([wording.conversation, *quotes]))
    if people:
        lines = [f"- {name}" + (f" — {about}" if about else "") for name, about in people]
        parts.append("\n".join([wording.people, *lines]))
    if facts:
        parts.append("\n".join([wording.facts, *(f"- {fact['content']}" for fact in facts)]))
    return "\n\n".join(parts)


def seq(message: MessageRow) -> int:
    return message["seq"]


def quoted_topics(
    topics: Sequence[RecalledTopic], picks: Sequence[SelectedTopic]
) -> list[UsedTopic]:
    """The topics the memory-only answer quotes, as its sources: the context the answer
    never read may hold more of them (the candidates after a selection the search order
    made), and listing those would name sources it did not use."""
    by_id = {pick["id"]: pick for pick in picks}
    return [UsedTopic(**by_id[topic.id], cut=not topic.whole) for topic in topics]


def compose(deps: Deps, context: ResponseContext, state: ResponseState) -> tuple[str, ContextUsed]:
    user_id = context.user_id
    queries = search_queries(state["text"], state.get("query"))
    selected = state.get("selected_topics") or []
    topics = recall_topics(deps, user_id, selected, queries)
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
        exclude_topic_ids={topic["id"] for topic in selected},
        on_screen={message["id"] for message in newest},
    )
    selected_people: Sequence[SelectedPerson] = state.get("selected_people") or []
    found_people = deps.store.people.by_ids(user_id, [p["id"] for p in selected_people])
    people = [(person["name"], clip(person["bio"] or "", QUOTE_CHARS)) for person in found_people]
    facts = state.get("fact_candidates") or []
    answer = memory_answer(language_of(state["text"]), topics, conversation, people, facts)
    return answer, quoted_topics(topics, selected)


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
