"""Imported conversations' titles: kept per user, replaced when given again, and matched
to a topic's messages by their external id prefix."""

from __future__ import annotations

from app.views import conversations_of
from stores.relational import RelationalStore


def test_titles_are_per_user_and_replaced(relational_store: RelationalStore) -> None:
    sessions = relational_store.sessions
    sessions.set_titles(1, {"chatgpt:a": "Sourdough", "tg:7": "Олег"})
    sessions.set_titles(2, {"chatgpt:a": "Someone else's"})
    sessions.set_titles(1, {"chatgpt:a": "Sourdough, v2"})
    assert sessions.titles(1) == {"chatgpt:a": "Sourdough, v2", "tg:7": "Олег"}
    assert sessions.titles(2) == {"chatgpt:a": "Someone else's"}
    assert sessions.titles(3) == {}


def test_a_topics_conversations_in_order_of_first_message() -> None:
    titles = {"chatgpt:a": "Sourdough", "tg:7": "Олег", "tg:8": "unused"}
    ids = ["tg:7:1", "chatgpt:a:n1", "tg:7:2", "own-message-1", "chatgpt:b:n2"]
    assert conversations_of(ids, titles) == ["Олег", "Sourdough"]
    assert conversations_of([], titles) == []
