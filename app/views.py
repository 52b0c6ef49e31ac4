"""What the command line, the bot and Studio show of a user's memory, as JSON-ready data.

One view of a topic (external message ids, membership rather than range), used by
`topica topics`, `topica ingest --json`, `topica export`, `/export` and the result of a
turn alike; one view of an answer's sources, used by `topica ask --json`, the bot's
Sources button and `/why`. Plain functions over the store: callers on an event loop run them through
`asyncio.to_thread`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.offers import offers_export
from app.tasks import tasks_export
from core.found import found_in
from core.ports import Store
from core.records import AnswerRow, MessageRow, TopicRow

if TYPE_CHECKING:  # `topica topics` shows topics without loading LangGraph
    from core.deps import Deps
    from core.state import ResponseState


def topic_view(deps: Deps, user_id: int, topics: Sequence[TopicRow]) -> list[dict[str, Any]]:
    """Topics with their bounds and members as the files' (external) message ids."""
    store = deps.store
    members = store.messages.external_ids_by_topic(user_id, [topic["id"] for topic in topics])
    bounds = store.messages.by_ids(
        user_id, [i for topic in topics for i in (topic["start_msg_id"], topic["end_msg_id"])]
    )
    external = {row["id"]: row["external_id"] for row in bounds}
    titles = store.sessions.titles(user_id)
    return [
        {
            "id": topic["id"],
            "summary": topic["summary"],
            "start_msg_id": external.get(topic["start_msg_id"]),
            "end_msg_id": external.get(topic["end_msg_id"]),
            "message_count": topic["message_count"],
            "size_chars": topic["size_chars"],
            "first_message_at": topic["first_message_at"],
            "last_message_at": topic["last_message_at"],
            "message_ids": members[topic["id"]],
            "conversations": conversations_of(members[topic["id"]], titles),
        }
        for topic in topics
    ]


def conversations_by_topic(
    store: Store, user_id: int, topic_ids: Sequence[int]
) -> dict[int, list[str]]:
    """Each topic's imported conversations' titles (`conversations_of`); empty lists for a
    user who imported none."""
    titles = store.sessions.titles(user_id)
    members = store.messages.external_ids_by_topic(user_id, topic_ids) if titles else {}
    return {topic_id: conversations_of(members.get(topic_id, []), titles) for topic_id in topic_ids}


def conversations_of(external_ids: Sequence[str], titles: Mapping[str, str]) -> list[str]:
    """The titles of the imported conversations these messages came from, first seen first
    (a message's conversation key is its external id less the last `:` part)."""
    keys = dict.fromkeys(external_id.rsplit(":", 1)[0] for external_id in external_ids)
    return [titles[key] for key in keys if key in titles]


def export_user(deps: Deps, user_id: int) -> dict[str, Any]:
    """Everything Topica keeps about one user."""
    store = deps.store
    messages = store.messages.all_of(user_id)
    return {
        "user_id": user_id,
        "messages": messages,
        "topics": topic_view(deps, user_id, store.topics.all_of(user_id)),
        "facts": store.facts.all_of(user_id),
        "fact_history": store.facts.history(user_id),
        "people": store.people.all_of(user_id),
        "answers": answers_export(store.answers.all_of(user_id), messages),
        **documents_and_edits_export(store, user_id, messages),
        "tasks": tasks_export(deps, user_id),
        "reminder_offers": offers_export(deps, user_id),
    }


def documents_and_edits_export(
    store: Store, user_id: int, messages: Sequence[MessageRow]
) -> dict[str, list[dict]]:
    """The documents kept with messages and every edit of a message, the messages named by
    their external ids."""
    external = {message["id"]: message["external_id"] for message in messages}
    return {
        "attachments": [
            {
                "message_id": external.get(row["message_id"]),
                "name": row["name"],
                "mime_type": row["mime_type"],
                "content": row["content"],
                "created_at": row["created_at"],
            }
            for row in store.attachments.all_of(user_id)
        ],
        "message_edits": [
            {
                "message_id": external.get(row["message_id"]),
                "old_content": row["old_content"],
                "new_content": row["new_content"],
                "at": row["at"],
            }
            for row in store.messages.edits(user_id)
        ],
    }


def answers_export(answers: Sequence[AnswerRow], messages: Sequence[MessageRow]) -> list[dict]:
    """Each answer's record as kept, its messages named by their external ids."""
    external = {message["id"]: message["external_id"] for message in messages}
    return [
        {
            "message_id": external[answer["message_id"]],
            "answered_by": answer["answered_by"],
            "partial": answer["partial"],
            "created_at": answer["created_at"],
            "context_used": {
                **answer["context_used"],
                "earlier_messages": [
                    external[row_id]
                    for row_id in answer["context_used"].get("earlier_messages", [])
                    if row_id in external
                ],
            },
        }
        for answer in answers
    ]


def still_held(
    used: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], fields: Sequence[str]
) -> list[dict[str, Any]]:
    """Each record an answer used that memory still holds: the answer's reference to it
    (id, reason, …) with these `fields` as stored now."""
    stored = {row["id"]: row for row in rows}
    return [
        {**reference, **{name: stored[reference["id"]][name] for name in fields}}
        for reference in used
        if reference["id"] in stored
    ]


def sources_view(deps: Deps, user_id: int, context_used: dict[str, Any]) -> dict[str, Any]:
    """An answer's sources as people read them: each topic, fact, person and earlier message
    as memory holds it now. What was forgotten since is left out and counted."""
    store = deps.store
    topics, facts, people, earlier = (
        context_used.get(key, []) for key in ("topics", "facts", "people", "earlier_messages")
    )
    view = {
        "topics": still_held(
            topics,
            store.topics.by_ids(user_id, [topic["id"] for topic in topics]),
            ("summary", "first_message_at", "last_message_at"),
        ),
        "facts": still_held(
            facts, store.facts.by_ids(user_id, [fact["id"] for fact in facts]), ("content", "type")
        ),
        "people": still_held(
            people,
            store.people.by_ids(user_id, [person["id"] for person in people]),
            ("name", "circle"),
        ),
        "earlier_messages": [
            {
                "id": message["external_id"],
                "role": message["role"],
                "created_at": message["created_at"],
                "content": message["content"],
            }
            for message in store.messages.by_ids(user_id, earlier)
        ],
        "session_summary": context_used.get("session_summary", False),
        "tools": context_used.get("tools", []),
        "fallbacks": context_used.get("fallbacks", {}),
    }
    referenced = len(topics) + len(facts) + len(people) + len(earlier)
    shown = sum(len(view[key]) for key in ("topics", "facts", "people", "earlier_messages"))
    return {**view, "forgotten": referenced - shown}


def answer_view(deps: Deps, user_id: int, message_id: int | None = None) -> dict[str, Any] | None:
    """One answer of the user (the newest if `message_id` is None) with its sources; None
    when the user has no such answer."""
    store = deps.store
    answer = (
        store.answers.latest(user_id)
        if message_id is None
        else store.answers.get(user_id, message_id)
    )
    if answer is None:
        return None
    return {
        "answer_id": answer["message_id"],
        "answered_by": answer["answered_by"],
        "partial": answer["partial"],
        "created_at": answer["created_at"],
        "sources": sources_view(deps, user_id, answer["context_used"]),
    }


def turn_result(deps: Deps, user_id: int, state: ResponseState, llm_calls: int) -> dict[str, Any]:
    """The turn as `topica ask --json` prints it; topics in the reranker's order."""
    store = deps.store
    selected = state.get("selected_topics") or []
    views = {
        view["id"]: view
        for view in topic_view(
            deps, user_id, store.topics.by_ids(user_id, [t["id"] for t in selected])
        )
    }
    people_reasons = {p["id"]: p["reason"] for p in state.get("selected_people") or []}
    people = store.people.by_ids(user_id, list(people_reasons))
    return {
        **unread_turn_result(state, llm_calls),
        "topics": [
            {
                "id": pick["id"],
                "reason": pick["reason"],
                "score": pick["score"],
                "start_msg_id": views[pick["id"]]["start_msg_id"],
                "end_msg_id": views[pick["id"]]["end_msg_id"],
                "message_ids": views[pick["id"]]["message_ids"],
            }
            for pick in selected
            if pick["id"] in views
        ],
        "people": [
            {"id": person["id"], "name": person["name"], "reason": people_reasons[person["id"]]}
            for person in people
        ],
        **answer_sources_result(deps, user_id, state.get("answer_message_id")),
    }


def unread_turn_result(state: ResponseState, llm_calls: int) -> dict[str, Any]:
    """`turn_result` from the turn's state alone, reading no store (what `turn_result`
    adds: the topics, the people and the stored answer, left empty here)."""
    return {
        "answer": state.get("answer", ""),
        "topics": [],
        "people": [],
        "facts": [
            {
                "id": fact["id"],
                "content": fact["content"],
                "type": fact["type"],
                "importance": fact["importance"],
                "score": fact["score"],
            }
            for fact in found_in(state)["facts"]
        ],
        "fallback": state.get("rerank_fallback"),
        "context_tokens": state.get("context_tokens", 0),
        "llm_calls": llm_calls,
        "answered_by": state.get("answered_by"),
        "partial": bool(state.get("answer_partial")),
        "message_id": state.get("message_id"),
        "answer_id": None,
        "sources": None,
    }


def answer_sources_result(deps: Deps, user_id: int, message_id: int | None) -> dict[str, Any]:
    """The stored answer's id and its sources (None for both when nothing was stored)."""
    answer = answer_view(deps, user_id, message_id) if message_id is not None else None
    return {
        "answer_id": message_id,
        "sources": answer["sources"] if answer else None,
    }
