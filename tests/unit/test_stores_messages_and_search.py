"""The SQLite store: migrations, messages and full-text search (each user's words apart).

Every test runs against a real SQLite file. The user-isolation tests give two
users the same data, so a missing `user_id` filter shows up as a wrong row.
Topics: test_stores_topics.py; facts and people: test_stores_facts_and_people.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from core.errors import StoreError
from core.records import NewMessage
from stores.fulltext import user_match_expression
from stores.relational import RelationalStore
from stores.relational.schema import MIGRATIONS
from tests.support.legacy_schema import add_before_kinds, save_before_kinds
from tests.support.messages import ids


def table_names(store: RelationalStore) -> set[str]:
    rows = store.db.rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {row[0] for row in rows}


# -- migrations --------------------------------------------------------------------


@pytest.mark.stores("sqlite")  # PostgreSQL's: tests/integration/test_postgres_store.py
def test_a_new_database_is_migrated_to_the_latest_schema(store: RelationalStore):
    assert store.schema_version == len(MIGRATIONS) >= 1
    assert {"users", "messages", "topics", "facts", "fact_history", "people"} <= table_names(store)
    assert {"messages_fts", "topics_fts"} <= table_names(store)


def test_reopening_a_database_keeps_its_data_and_does_not_migrate_again(
    tmp_path: Path, make_messages: Callable[..., list[NewMessage]]
):
    path = tmp_path / "topica.sqlite3"
    first = RelationalStore(path)
    first.messages.add(1, make_messages(["hello", "hi there"]))
    first.close()

    reopened = RelationalStore(path)
    try:
        assert reopened.schema_version == len(MIGRATIONS)
        assert [row["content"] for row in reopened.messages.all_of(1)] == ["hello", "hi there"]
    finally:
        reopened.close()


def test_full_text_indexes_of_schema_3_are_rebuilt_with_the_user_indexed(
    tmp_path: Path, make_messages, monkeypatch
):
    import stores.relational.database as database

    path = tmp_path / "topica.sqlite3"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:3])
    old = RelationalStore(path)
    for user_id in (1, 2):
        rows = add_before_kinds(old, user_id, make_messages(["the vet said rest", "garden roses"]))
        save_before_kinds(old, user_id, "Vet visit and roses", rows)
    add_before_kinds(old, 1, make_messages(["vet again tomorrow"], prefix="later"))
    old.close()
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)

    store = RelationalStore(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        hits = store.messages.search(1, "vet", 10)
        assert len(hits) == 2
        assert {row["content"] for row in store.messages.by_ids(1, [i for i, _ in hits])} == {
            "the vet said rest",
            "vet again tomorrow",
        }
        assert len(store.topics.search(2, "roses", 10)) == 1
        # The index itself returns only the user's rows, before any join.
        matched = store.db.rows(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?",
            [user_match_expression(2, "vet")],
        )[0][0]
        assert matched == 1
        # Rows written after the migration are indexed by the new triggers.
        store.messages.add(2, make_messages(["vet bill paid"], prefix="new"))
        assert len(store.messages.search(2, "vet", 10)) == 2
    finally:
        store.close()


# -- messages ----------------------------------------------------------------------


def test_add_messages_stores_rows_in_order_with_per_user_seq_and_utc_ts(
    store: RelationalStore, make_messages
):
    rows = store.messages.add(7, make_messages(["один", "two", "три"]))
    assert [row["seq"] for row in rows] == [1, 2, 3]
    assert [row["external_id"] for row in rows] == ["m1", "m2", "m3"]
    assert [row["role"] for row in rows] == ["user", "assistant", "user"]
    assert all(row["topic_id"] is None for row in rows)
    assert store.messages.all_of(7) == rows and store.messages.all_of(1) == []
    assert rows[1]["ts"] - rows[0]["ts"] == 60.0


def test_sequence_numbers_are_per_user_even_when_users_interleave(
    store: RelationalStore, make_messages
):
    store.messages.add(1, make_messages(["a1", "a2"], prefix="a"))
    store.messages.add(2, make_messages(["b1"], prefix="b"))
    store.messages.add(1, make_messages(["a3"], prefix="c"))
    store.messages.add(2, make_messages(["b2", "b3"], prefix="d"))

    assert [(row["seq"], row["content"]) for row in store.messages.all_of(1)] == [
        (1, "a1"),
        (2, "a2"),
        (3, "a3"),
    ]
    assert [(row["seq"], row["content"]) for row in store.messages.all_of(2)] == [
        (1, "b1"),
        (2, "b2"),
        (3, "b3"),
    ]


def test_messages_already_stored_are_skipped_by_external_id(store: RelationalStore, make_messages):
    first = store.messages.add(1, make_messages(["one", "two"]))
    again = store.messages.add(1, make_messages(["one", "two", "three"]))

    assert [row["external_id"] for row in again] == ["m3"]
    assert again[0]["seq"] == 3
    assert store.messages.count(1) == 3
    assert store.messages.add(1, make_messages(["one", "two", "three"])) == []
    assert ids(store.messages.all_of(1))[:2] == ids(first)


def test_messages_by_more_ids_than_one_statement_binds_come_in_order(
    store: RelationalStore, make_messages
):
    stored = store.messages.add(1, make_messages(["one", "two", "three"]))
    unknown = range(10**9, 10**9 + 300_000)  # past SQLite's 250,000 and PostgreSQL's 65,535
    asked = [stored[2]["id"], *unknown, stored[0]["id"], stored[1]["id"]]

    assert ids(store.messages.by_ids(1, asked)) == ids(stored)
    assert store.messages.by_ids(2, asked) == []


def test_the_same_external_id_belongs_to_each_user_separately(
    store: RelationalStore, make_messages
):
    store.messages.add(1, make_messages(["mine"]))
    stored = store.messages.add(2, make_messages(["also mine"]))
    assert [row["content"] for row in stored] == ["also mine"]
    assert store.messages.count(1) == store.messages.count(2) == 1


@pytest.mark.parametrize(
    ("field", "bad_value"),
    [
        ("created_at", "not a timestamp"),
        ("role", "system"),
        ("content", None),
    ],
)
def test_add_messages_is_all_or_nothing(store: RelationalStore, make_messages, field, bad_value):
    """One bad message in the middle of a batch: an error, and none of the batch stored."""
    store.messages.add(1, make_messages(["already here"], prefix="old"))
    batch = make_messages(["first", "second", "third", "fourth"])
    batch[2][field] = bad_value

    with pytest.raises((StoreError, sqlite3.IntegrityError, ValueError)):
        store.messages.add(1, batch)

    assert [row["content"] for row in store.messages.all_of(1)] == ["already here"]
    assert store.messages.unarchived(1) == store.messages.all_of(1)


# -- full-text search ----------------------------------------------------------------


def test_message_search_only_returns_the_users_own_messages(store: RelationalStore, make_messages):
    texts = ["Marathon training plan for my knee", "Talk to the physio about the knee"]
    mine = store.messages.add(1, make_messages(texts, prefix="a"))
    theirs = store.messages.add(2, make_messages([*texts, "knee knee marathon"], prefix="b"))

    found = store.messages.search(1, "marathon knee", limit=10)
    assert {message_id for message_id, _ in found} == set(ids(mine))
    assert found[0][0] == mine[0]["id"]  # it matches both words
    assert {message_id for message_id, _ in store.messages.search(2, "marathon", 10)} == {
        theirs[0]["id"],
        theirs[2]["id"],
    }


def test_message_search_matches_russian_inflections_by_prefix(
    store: RelationalStore, make_messages
):
    rows = store.messages.add(1, make_messages(["Готовлюсь к полумарафону в Берлине", "про кота"]))
    assert [message_id for message_id, _ in store.messages.search(1, "полумарафон", 5)] == [
        rows[0]["id"]
    ]
    assert store.messages.search(1, "и в на", 5) == []  # only stop words: no query at all


def test_topic_search_only_returns_the_users_own_topics(store: RelationalStore, make_messages):
    mine = store.messages.add(1, make_messages(["x"], prefix="a"))
    theirs = store.messages.add(2, make_messages(["y"], prefix="b"))
    [my_topic] = store.topics.save(1, [("Postgres upgrade in Docker", ids(mine))])
    store.topics.save(2, [("Postgres upgrade in Docker", ids(theirs))])

    assert [topic_id for topic_id, _ in store.topics.search(1, "postgres", 10)] == [my_topic["id"]]


# -- each user's words in the full-text index ----------------------------------------


@pytest.mark.stores("sqlite")
def test_schema_10_is_indexed_again_each_users_words_apart(
    tmp_path: Path, make_messages, monkeypatch
):
    """Migration 11: the full-text indexes of a store written before it are rebuilt with
    each word behind its user's tag, and the triggers keep them in step from then on:
    a rewritten message is found by its new words only, a deleted topic by none."""
    import stores.relational.database as database

    path = tmp_path / "topica.sqlite3"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:10])
    old = RelationalStore(path)
    for user_id in (1, 2):
        rows = old.messages.add(user_id, make_messages(["the vet said rest", "garden roses"]))
        old.topics.save(user_id, [("Vet visit and roses", [row["id"] for row in rows])])
    old.close()
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS)

    store = RelationalStore(path)
    try:
        assert store.schema_version == len(MIGRATIONS) >= 11
        assert [len(store.messages.search(u, "vet", 10)) for u in (1, 2)] == [1, 1]
        words = {row[0] for row in store.db.rows("SELECT words FROM messages_fts")}
        assert words == {None}  # contentless: the index keeps no copy of the text
        for user_id in (1, 2):
            count = "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?"
            assert store.db.rows(count, [user_match_expression(user_id, "vet roses")])[0][0] == 2

        # (checked before the edit: an edited topic is stale, out of search until resummarised)
        assert [len(store.topics.search(u, "roses", 10)) for u in (1, 2)] == [1, 1]
        message_id = store.messages.search(1, "vet", 10)[0][0]
        store.messages.rewrite(1, message_id, "the doctor said rest", edit=True)
        assert store.messages.search(1, "vet", 10) == []
        assert [i for i, _ in store.messages.search(1, "doctor", 10)] == [message_id]
        assert len(store.messages.search(2, "vet", 10)) == 1

        (topic,) = store.topics.all_of(2)
        store.topics.delete(2, topic["id"])
        assert store.topics.search(2, "roses", 10) == []
    finally:
        store.close()


def test_user_tags_never_make_one_users_word_anothers():
    """User 1 writing "7abacus" and user 0x17 writing "abacus": the fixed-width tags keep
    the two tokens apart, so neither's query stem is a prefix of the other's word; a
    negative id (a group chat) has its own sign."""
    from stores.fulltext import user_tag, user_words

    one, other = user_words(1, "7abacus"), user_words(0x17, "abacus")
    assert user_match_expression(0x17, "abacus") == f'"{user_tag(0x17)}abacu"*'
    assert not one.startswith(user_tag(0x17) + "abacu")
    assert not other.startswith(user_tag(1) + "7abac")
    assert user_tag(-5) != user_tag(5) and len(user_tag(-5)) == len(user_tag(5)) == 17
    assert user_words(7, "Мама's cake — 2022") == " ".join(
        user_tag(7) + word for word in ("мама", "s", "cake", "2022")
    )


@pytest.mark.stores("sqlite")
def test_a_users_search_never_reads_anothers_words(store: RelationalStore, make_messages):
    """User 1's "7ab" against user 23's "ab", and a group chat's negative id: each
    query finds its own user's row in the index itself, before any join."""
    store.messages.add(1, make_messages(["7abacus"]))
    store.messages.add(0x17, make_messages(["abacus"]))
    store.messages.add(-0x17, make_messages(["abacus"]))
    count = "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?"
    for user_id, text in ((1, "7abacus"), (0x17, "abacus"), (-0x17, "abacus")):
        assert store.db.rows(count, [user_match_expression(user_id, text)])[0][0] == 1
        assert len(store.messages.search(user_id, text, 10)) == 1
