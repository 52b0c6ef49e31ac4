"""What the Mini App shows of a user's memory, as JSON-ready data.

Plain functions over the store, every read scoped to one user: a record of another user
is never found (`StoreError`, as for a missing one). Callers on an event loop run them
through `asyncio.to_thread`.
"""

from __future__ import annotations

from typing import Any

from app.views import answer_view, conversations_by_topic
from core.context import ResponseContext
from core.deps import Deps
from core.records import FactRow
from nodes.response.search import topic_candidates

CORE_IMPORTANCE = 90
"""A fact this important is a core fact (always in the user's profile)."""


def timeline(deps: Deps, user_id: int, query: str = "", since: str = "", until: str = "") -> list:
    """The user's topics, newest first, or in search order (the bot's topic search) for a
    `query`; `since`/`until` (ISO dates) keep the topics that overlap that span."""
    store = deps.store
    if query.strip():
        context = ResponseContext.from_settings(deps.settings, user_id=user_id)
        ids = [candidate["id"] for candidate in topic_candidates(deps, context, [query])]
        order = {topic_id: rank for rank, topic_id in enumerate(ids)}
        topics = sorted(store.topics.by_ids(user_id, ids), key=lambda t: order[t["id"]])
    else:
        topics = sorted(store.topics.all_of(user_id), key=lambda t: t["last_message_at"])[::-1]
    conversations = conversations_by_topic(store, user_id, [topic["id"] for topic in topics])
    return [
        {
            "id": topic["id"],
            "summary": topic["summary"],
            "first_message_at": topic["first_message_at"],
            "last_message_at": topic["last_message_at"],
            "message_count": topic["message_count"],
            "conversations": conversations[topic["id"]],
        }
        for topic in topics
        if (not since or topic["last_message_at"] >= since)
        and (not until or topic["first_message_at"][: len(until)] <= until)
    ]


def topic_detail(deps: Deps, user_id: int, topic_id: int) -> dict[str, Any]:
    """A topic with its messages, the documents kept with them and the facts learnt from it."""
    store = deps.store
    topic = store.topics.get(user_id, topic_id)
    messages = store.messages.of_topic(user_id, topic_id)
    ids = {message["id"] for message in messages}
    return {
        "id": topic["id"],
        "summary": topic["summary"],
        "first_message_at": topic["first_message_at"],
        "last_message_at": topic["last_message_at"],
        "messages": [
            {
                "role": m["role"],
                "author": m["author"],
                "content": m["content"],
                "created_at": m["created_at"],
            }
            for m in messages
        ],
        "documents": [
            {"name": row["name"], "mime_type": row["mime_type"], "chars": len(row["content"])}
            for row in store.attachments.all_of(user_id)
            if row["message_id"] in ids
        ],
        "facts": [fact_view(fact) for fact in store.facts.of_topic(user_id, topic_id)],
    }


def fact_view(fact: FactRow) -> dict[str, Any]:
    return {
        "id": fact["id"],
        "type": fact["type"],
        "content": fact["content"],
        "importance": fact["importance"],
        "core": fact["importance"] >= CORE_IMPORTANCE,
        "topic_id": fact["topic_id"],
        "updated_at": fact["updated_at"],
    }


def facts_by_type(deps: Deps, user_id: int) -> dict[str, list[dict[str, Any]]]:
    """The user's facts grouped by type, most important first in each group."""
    groups: dict[str, list[dict[str, Any]]] = {}
    facts = sorted(deps.store.facts.all_of(user_id), key=lambda f: -f["importance"])
    for fact in facts:
        groups.setdefault(fact["type"], []).append(fact_view(fact))
    return groups


def people_view(deps: Deps, user_id: int) -> list[dict[str, Any]]:
    """Each person with aliases, circle, what is known and the topics that name them."""
    store = deps.store
    topics = store.topics.all_of(user_id)
    people = sorted(store.people.all_of(user_id), key=lambda p: p["name"].casefold())
    return [
        {
            "id": person["id"],
            "name": person["name"],
            "aliases": person["aliases"],
            "circle": person["circle"],
            "bio": person["bio"],
            "topics": [
                {"id": topic["id"], "summary": topic["summary"]}
                for topic in topics
                if mentions(topic["summary"], [person["name"], *person["aliases"]])
            ],
        }
        for person in people
    ]


def mentions(text: str, names: list[str]) -> bool:
    folded = text.casefold()
    return any(name and name.casefold() in folded for name in names)


def recent_answers(deps: Deps, user_id: int, limit: int = 10) -> list[dict[str, Any]]:
    """The newest answers (newest first) with their sources, as the Sources button shows."""
    store = deps.store
    answers = store.answers.all_of(user_id)[-limit:][::-1]
    contents = {
        m["id"]: m["content"]
        for m in store.messages.by_ids(user_id, [answer["message_id"] for answer in answers])
    }
    views = []
    for answer in answers:
        view = answer_view(deps, user_id, answer["message_id"])
        if view is not None:
            views.append({**view, "content": contents.get(answer["message_id"], "")})
    return views
