"""Kinds of message: only conversation becomes memory; the rest stays in the log.

Real SQLite files. The migration test writes a store as schema 5 left it (memory-only
answers recognisable only by their answer record) and opens it with today's code.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest

from core.errors import StoreError
from core.records import MEMORY_KIND, NewMessage
from nodes.response.session_summary import live_messages, session_view
from stores.relational import RelationalStore
from stores.relational.schema import MIGRATIONS
from tests.support.legacy_schema import add_before_kinds
from tests.support.messages import BASE_TIME, ids, new_messages


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
    assert store.messages.unarchived_count(1) == 2 and store.messages.unarchived_count(2) == 0
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


def whole_segment_view(
    store: RelationalStore, user_id: int, current: set[int], window_size: int
) -> tuple[bool, list[int], list[int]]:
    """The session view as it was defined before the view read only the segment's
    unarchived part: every message of the segment read, the live part taken from it."""
    segment = store.sessions.current_segment(user_id)
    history = [
        m
        for m in store.messages.all_of(user_id)
        if m["segment"] == segment and m["id"] not in current
    ]
    live = live_messages(history)
    split = max(0, len(live) - window_size)
    older = [m for m in live[:split] if m["kind"] == MEMORY_KIND]
    return len(history) > window_size, ids(live[split:]), ids(older)


def test_the_session_view_reads_the_unarchived_part_as_the_whole_segment_gives_it(
    store: RelationalStore,
):
    """Random sessions: conversation and memory-only answers, /new now and then, stretches
    archived (in order, and one out of order), a turn of one or several messages. The view
    built from the segment's unarchived part and a count capped at the window equals the
    one built from every message of the segment."""
    rng = random.Random(15)
    for user_id in range(100, 140):
        minute = 0
        for _ in range(rng.randint(1, 4)):
            count = rng.randint(0, 25)
            batch = []
            for _ in range(count):
                minute += 1
                if rng.random() < 0.25:
                    batch.append(memory_answer(f"u{user_id}-a{minute}", f"found {minute}", minute))
                else:
                    batch.append(
                        new_messages(
                            [(rng.choice(["user", "assistant"]), f"message {minute}")],
                            start=BASE_TIME + timedelta(minutes=minute),
                            prefix=f"u{user_id}-m{minute}-",
                        )[0]
                    )
            rows = store.messages.add(user_id, batch)
            conversation = [r for r in rows if r["kind"] == MEMORY_KIND]
            archived = rng.randint(0, len(conversation))
            if archived:
                store.topics.save(user_id, [("a stretch", ids(conversation[:archived]))])
            if len(conversation) > archived + 2 and rng.random() < 0.3:
                late = conversation[archived + 1 : archived + 2]  # archived out of order
                store.topics.save(user_id, [("a later stretch", ids(late))])
            if rng.random() < 0.4:
                store.sessions.start_new_segment(user_id)
        newest = store.messages.recent(user_id, rng.randint(1, 3))
        current = set(ids(newest)) if newest and rng.random() < 0.8 else set()
        message_id = max(current) if current else None
        for window_size in (1, 3, 8, 30):
            view = session_view(store, user_id, message_id, window_size, current - {message_id})
            expected = whole_segment_view(store, user_id, current, window_size)
            got = (view.longer_than_window, ids(view.window), ids(view.older_unarchived))
            assert got == expected, (user_id, window_size)


def test_a_segment_holds_all_messages_until_the_next_one_starts(store: RelationalStore):
    assert not store.messages.holds_all(1, 0)  # no messages yet
    store.messages.add(1, new_messages(["one", "two"]))
    assert store.messages.holds_all(1, 0)
    assert not store.messages.holds_all(1, 1)
    assert store.sessions.start_new_segment(1) == 1
    store.messages.add(1, new_messages(["three"], start=BASE_TIME + timedelta(hours=1), prefix="n"))
    assert not store.messages.holds_all(1, 0)
    assert not store.messages.holds_all(1, 1)
    assert not store.messages.holds_all(2, 0)  # another user's messages are not theirs


def test_migration_13_admits_task_messages_and_keeps_refusing_unknown_kinds(
    tmp_path: Path, monkeypatch
):
    import sqlite3

    import stores.relational.database as database

    path = tmp_path / "topica.sqlite3"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:12])
    old = RelationalStore(path)
    [before] = old.messages.add(1, new_messages(["remind me to call mum"]))
    old.close()
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)

    store = RelationalStore(path)
    try:
        task = NewMessage(
            external_id="task:1:2026-11-27T09:00:00+00:00",
            role="assistant",
            content="call mum",
            created_at="2026-11-27T09:00:00+00:00",
            kind="task",
        )
        [sent] = store.messages.add(1, [task])
        assert [(row["id"], row["kind"]) for row in store.messages.all_of(1)] == [
            (before["id"], "conversation"),
            (sent["id"], "task"),
        ]
        assert ids(store.messages.unarchived(1)) == [before["id"]]
        assert store.vector_queue.pending(1, "messages", 10) == [before["id"]]
        with pytest.raises(sqlite3.IntegrityError), store.db.transaction() as db:
            db.execute("UPDATE messages SET kind = 'gossip' WHERE id = ?", (sent["id"],))
        assert [tuple(row) for row in store.db.rows("PRAGMA integrity_check")] == [("ok",)]
    finally:
        store.close()
