"""What the command line, the bot and Studio show of a user's memory, as JSON-ready data.

One view of a topic (external message ids, membership rather than range), used by
`topica topics`, `topica ingest --json`, `topica export`, `/export` and the result of a
turn alike. Plain functions over the store: callers on an event loop run them through
`asyncio.to_thread`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.deps import Deps
from core.records import TopicRow
from core.state import ResponseState


def topic_view(deps: Deps, user_id: int, topics: Sequence[TopicRow]) -> list[dict[str, Any]]:
    """Topics with their bounds and members as the files' (external) message ids."""
    store = deps.store
    members = store.messages.external_ids_by_topic(user_id, [topic["id"] for topic in topics])
    bounds = store.messages.by_ids(
        user_id, [i for topic in topics for i in (topic["start_msg_id"], topic["end_msg_id"])]
    )
    external = {row["id"]: row["external_id"] for row in bounds}
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
        }
        for topic in topics
    ]


def export_user(deps: Deps, user_id: int) -> dict[str, Any]:
    """Everything Topica keeps about one user."""
    store = deps.store
    return {
        "user_id": user_id,
        "messages": store.messages.all_of(user_id),
        "topics": topic_view(deps, user_id, store.topics.all_of(user_id)),
        "facts": store.facts.all_of(user_id),
        "fact_history": store.facts.history(user_id),
        "people": store.people.all_of(user_id),
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
        "answer": state.get("answer", ""),
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
        "facts": [
            {
                "id": fact["id"],
                "content": fact["content"],
                "type": fact["type"],
                "importance": fact["importance"],
                "score": fact["score"],
            }
            for fact in state.get("fact_candidates") or []
        ],
        "fallback": state.get("rerank_fallback"),
        "context_tokens": state.get("context_tokens", 0),
        "llm_calls": llm_calls,
    }
