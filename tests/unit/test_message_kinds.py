"""Kinds of message: only conversation becomes memory; the rest stays in the log.

Real SQLite files. The migration test writes a store as schema 5 left it (memory-only
answers recognisable only by their answer record) and opens it with today's code.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from core.errors import StoreError
from core.records import NewMessage
from nodes.response.session_summary import session_view
from stores.relational import RelationalStore
from stores.relational.schema import MIGRATIONS
from tests.support.legacy_schema import add_before_kinds
from tests.support.messages import BASE_TIME, ids, new_messages


@pytest.fixture
def store(relational_store: RelationalStore) -> RelationalStore:
    """The store on each engine (SQLite, and PostgreSQL where a server answers)."""
    return relational_store


def memory_answer(external_id: str, content: str, minute: int) -> NewMessage:
    return NewMessage(
        external_id=external_id,
        role="assistant",
        content=content,
        created_at=(BASE_TIME + timedelta(minutes=minute)).isoformat(),
        kind="memory_only_answer",
    )


def test_a_message_is_conversation_unless_stored_as_another_kind(store: RelationalStore):
    rows = store.messages.add(1, new_messages(["the vet said rest"]))
    answer = store.messages.add(1, [memory_answer("a1", "here is what I found: vet", 1)])
    assert rows[0]["kind"] == "conversation"
    assert answer[0]["kind"] == "memory_only_answer"
    with pytest.raises(StoreError, match="unknown message kind"):
        store.messages.add(1, [{**memory_answer("a2", "x", 2), "kind": "gossip"}])
    assert store.messages.count(1) == 2


def test_only_conversation_waits_for_archiving_is_searched_and_queued_for_vectors(
    store: RelationalStore,
):
    conversation = store.messages.add(1, new_messages(["the vet said rest", "ok"]))
    answer = store.messages.add(1, [memory_answer("a1", "I found: the vet said rest", 5)])

    assert ids(store.messages.unarchived(1)) == ids(conversation)
    assert store.messages.users_with_unarchived()[0][1] == 2
    hits = [i for i, _ in store.messages.search(1, "vet", 10)]
    assert hits == [conversation[0]["id"]]
    assert answer[0]["id"] not in store.vector_queue.pending(1, "messages", 100)
    with pytest.raises(StoreError, match="only conversation"):
        store.topics.save(1, [("Vet", ids(conversation) + ids(answer))])
    assert store.topics.all_of(1) == []


def test_unarchived_messages_come_in_time_order_whatever_the_order_of_storage(
    store: RelationalStore,
):
    today = store.messages.add(1, new_messages(["today one", "today two"], prefix="live"))
    old = store.messages.add(
        1,
        new_messages(
            ["april one", "april two"], start=BASE_TIME - timedelta(days=300), prefix="old"
        ),
    )
    assert [row["content"] for row in store.messages.unarchived(1)] == [
        "april one",
        "april two",
        "today one",
        "today two",
    ]
    assert ids(store.messages.unarchived(1, limit=3)) == ids(old) + ids(today)[:1]


def test_migration_6_marks_memory_only_answers_and_queues_their_vectors_for_removal(
    tmp_path: Path, monkeypatch
):
    import stores.relational.database as database

    path = tmp_path / "topica.sqlite3"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:5])
    old = RelationalStore(path)
    question, reply, memory = add_before_kinds(
        old,
        1,
        new_messages(
            [
                "what did the vet say?",
                "rest, said the vet",
                ("assistant", "I found: the vet"),
            ]
        ),
    )
    old.answers.record(1, reply, {}, answered_by="responder")
    old.answers.record(1, memory, {}, answered_by="memory")
    old.vector_queue.clear(1, "messages", [question, reply, memory])
    old.close()
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)

    store = RelationalStore(path)
    try:
        kinds = {row["id"]: row["kind"] for row in store.messages.all_of(1)}
        assert kinds == {
            question: "conversation",
            reply: "conversation",
            memory: "memory_only_answer",
        }
        assert store.vector_queue.pending(1, "messages", 10) == [memory]
        assert ids(store.messages.unarchived(1)) == [question, reply]
        assert memory not in [i for i, _ in store.messages.search(1, "vet", 10)]
    finally:
        store.close()


def test_the_window_shows_a_memory_only_answer_but_the_summary_never_covers_one(
    store: RelationalStore,
):
    """The window is the live part of the session: its unarchived conversation with the
    memory-only answers among it; what is older than the window and summarised is
    conversation only, and a memory-only answer of a conversation archived since is gone."""
    first = store.messages.add(1, new_messages(["an old question"], prefix="o"))
    stale = store.messages.add(1, [memory_answer("a0", "I found: an old thing", 1)])
    store.topics.save(1, [("Old question", ids(first))])
    live = store.messages.add(
        1, new_messages(["one", "two", "three"], start=BASE_TIME + timedelta(minutes=5))
    )
    answer = store.messages.add(1, [memory_answer("a1", "I found: one", 9)])
    last = store.messages.add(
        1, new_messages(["four"], start=BASE_TIME + timedelta(minutes=10), prefix="n")
    )

    view = session_view(store, 1, None, window_size=3)
    assert ids(view.window) == [live[2]["id"], answer[0]["id"], last[0]["id"]]
    assert ids(view.older_unarchived) == ids(live[:2])
    assert stale[0]["id"] not in ids(view.window) + ids(view.older_unarchived)

    wide = session_view(store, 1, None, window_size=10)
    assert ids(wide.window) == ids(live) + ids(answer) + ids(last)
