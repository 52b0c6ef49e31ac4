"""The SQLite store: migrations, messages, full-text search, topics, facts and people.

Every test runs against a real SQLite file. The user-isolation tests give two
users the same data, so a missing `user_id` filter shows up as a wrong row.
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
from tests.support.messages import ids, new_messages


@pytest.fixture
def store(relational_store: RelationalStore) -> RelationalStore:
    """The store on each engine (SQLite, and PostgreSQL where a server answers)."""
    return relational_store


def table_names(store: RelationalStore) -> set[str]:
    rows = store.db.rows("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {row[0] for row in rows}


def topic_rows_count(store: RelationalStore) -> int:
    return store.db.rows("SELECT COUNT(*) FROM topics")[0][0]


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


# -- topics ------------------------------------------------------------------------


def test_save_topics_points_members_at_their_topic_and_measures_characters(
    store: RelationalStore, make_messages
):
    rows = store.messages.add(1, make_messages(["Привет 👋", "hello", "ещё", "end"]))
    first, second = store.topics.save(1, [("Greeting", ids(rows[:2])), ("Rest", ids(rows[2:]))])

    assert first["size_chars"] == len("Привет 👋") + len("hello") == 13  # characters, not bytes
    assert (first["start_msg_id"], first["end_msg_id"]) == (rows[0]["id"], rows[1]["id"])
    assert first["message_count"] == 2
    assert first["first_message_at"] == rows[0]["created_at"]
    assert first["last_message_at"] == rows[1]["created_at"]
    assert not first["facts_extracted"] and not first["consolidation_checked"]
    assert ids(store.messages.of_topic(1, first["id"])) == ids(rows[:2])
    assert ids(store.messages.of_topic(1, second["id"])) == ids(rows[2:])
    assert store.messages.unarchived(1) == []


def test_a_memory_is_counted_by_archived_messages_and_topics_up_to_a_bound(
    store: RelationalStore, make_messages
):
    """What the relevance floors are sized by (nodes.response.ranking.floors.SizeCurve)."""
    rows = store.messages.add(1, make_messages(["a", "b", "c", "d", "e"]))
    store.messages.add(2, make_messages(["x", "y", "z"], prefix="other"))
    assert store.messages.archived_count(1, 100) == store.topics.count(1, 100) == 0
    store.topics.save(1, [("First", ids(rows[:2])), ("Second", ids(rows[2:4]))])
    store.topics.save(2, [("Theirs", ids(store.messages.all_of(2)))])
    assert store.messages.archived_count(1, 100) == 4  # "e" is not archived yet
    assert store.topics.count(1, 100) == 2
    assert store.messages.archived_count(1, 3) == 3 and store.topics.count(1, 1) == 1
    assert store.messages.archived_count(2, 100) == 3 and store.topics.count(2, 100) == 1


def test_save_topics_again_with_the_same_drafts_returns_the_same_topics(
    store: RelationalStore, make_messages
):
    rows = store.messages.add(1, make_messages(["a", "b", "c", "d", "e"]))
    drafts = [("First", ids(rows[:3])), ("Second", ids(rows[3:]))]
    saved = store.topics.save(1, drafts)

    again = store.topics.save(1, drafts)

    assert again == saved
    assert topic_rows_count(store) == 2
    assert ids(store.messages.of_topic(1, saved[0]["id"])) == ids(rows[:3])


def test_save_topics_leaves_already_archived_members_where_they_are(
    store: RelationalStore, make_messages
):
    rows = store.messages.add(1, make_messages(["a", "b", "c"]))
    [old] = store.topics.save(1, [("Old", ids(rows[:2]))])
    [new] = store.topics.save(1, [("New", ids(rows))])

    assert new["id"] != old["id"]
    assert ids(store.messages.of_topic(1, old["id"])) == ids(rows[:2])
    assert ids(store.messages.of_topic(1, new["id"])) == [rows[2]["id"]]
    assert (new["start_msg_id"], new["message_count"]) == (rows[2]["id"], 1)


def test_save_topics_refuses_another_users_messages_and_writes_nothing(
    store: RelationalStore, make_messages
):
    mine = store.messages.add(1, make_messages(["mine"], prefix="a"))
    theirs = store.messages.add(2, make_messages(["theirs"], prefix="b"))

    with pytest.raises(StoreError):
        store.topics.save(1, [("Fine", ids(mine)), ("Stolen", ids(theirs))])

    assert topic_rows_count(store) == 0
    assert store.messages.all_of(2)[0]["topic_id"] is None


@pytest.fixture
def three_topics(store: RelationalStore, make_messages):
    """Topics A (m1-m3), B (m4-m6), C (m7-m9) of user 1: B lies between A and C."""
    rows = store.messages.add(1, make_messages([f"message {n}" for n in range(1, 10)]))
    topics = store.topics.save(
        1,
        [
            ("Alpha subject", ids(rows[:3])),
            ("Beta subject", ids(rows[3:6])),
            ("Gamma", ids(rows[6:])),
        ],
    )
    return rows, topics


def test_owned_ids_are_the_users_own_topics_and_people(store: RelationalStore, three_topics):
    """What the reranker confirms its candidates with: only ids, only the user's."""
    _, topics = three_topics
    other_rows = store.messages.add(2, new_messages(["hi", "ok"]))
    (theirs,) = store.topics.save(2, [("Their subject", ids(other_rows))])
    mine = [topic["id"] for topic in topics]
    asked = [mine[2], theirs["id"], mine[0], mine[0], 10**6, 2**64]
    assert store.topics.owned(1, asked) == {mine[0], mine[2]}
    assert store.topics.owned(2, asked) == {theirs["id"]}
    assert store.topics.owned(1, []) == set()
    anna, boris = store.people.add(1, "Anna"), store.people.add(2, "Boris")
    assert store.people.owned(1, [anna["id"], boris["id"], 2**63]) == {anna["id"]}
    assert store.people.owned(2, [anna["id"], boris["id"]]) == {boris["id"]}


def test_merging_non_adjacent_topics_moves_members_by_topic_id_only(
    store: RelationalStore, three_topics
):
    rows, (alpha, beta, gamma) = three_topics

    merged = store.topics.merge(1, gamma["id"], alpha["id"], "Alpha and gamma together")

    assert merged["id"] == alpha["id"]
    assert (merged["start_msg_id"], merged["end_msg_id"]) == (rows[0]["id"], rows[8]["id"])
    assert merged["size_chars"] == alpha["size_chars"] + gamma["size_chars"]
    assert merged["message_count"] == 6
    assert (merged["first_message_at"], merged["last_message_at"]) == (
        rows[0]["created_at"],
        rows[8]["created_at"],
    )
    assert merged["consolidation_checked"]
    assert merged["summary"] == "Alpha and gamma together"
    # The range now spans beta's messages, but membership alone decides.
    assert ids(store.messages.of_topic(1, alpha["id"])) == ids(rows[:3] + rows[6:])
    assert ids(store.messages.of_topic(1, beta["id"])) == ids(rows[3:6])
    assert store.messages.external_ids_by_topic(1, [alpha["id"], beta["id"]]) == {
        alpha["id"]: ["m1", "m2", "m3", "m7", "m8", "m9"],
        beta["id"]: ["m4", "m5", "m6"],
    }
    assert store.topics.get(1, beta["id"]) == beta
    with pytest.raises(StoreError):
        store.topics.get(1, gamma["id"])


def test_merge_updates_the_topic_search_index(store: RelationalStore, three_topics):
    _, (alpha, _, gamma) = three_topics
    store.topics.merge(1, gamma["id"], alpha["id"], "Consolidated holiday plans")

    assert [topic_id for topic_id, _ in store.topics.search(1, "holiday", 5)] == [alpha["id"]]
    assert store.topics.search(1, "gamma", 5) == []


def test_merge_refuses_another_users_topic_and_a_topic_into_itself(
    store: RelationalStore, three_topics, make_messages
):
    _, (alpha, beta, _) = three_topics
    other = store.messages.add(2, make_messages(["other user"], prefix="x"))
    [foreign] = store.topics.save(2, [("Foreign", ids(other))])

    with pytest.raises(StoreError):
        store.topics.merge(1, foreign["id"], alpha["id"], "stolen")
    with pytest.raises(StoreError):
        store.topics.merge(2, beta["id"], foreign["id"], "stolen")
    with pytest.raises(StoreError):
        store.topics.merge(1, alpha["id"], alpha["id"], "itself")
    with pytest.raises(StoreError):
        store.topics.merge(1, beta["id"], alpha["id"], "   ")

    assert store.topics.get(1, alpha["id"]) == alpha
    assert store.topics.get(2, foreign["id"]) == foreign
    assert ids(store.messages.of_topic(2, foreign["id"])) == ids(other)


def test_topic_lookups_ignore_other_users_ids(store: RelationalStore, three_topics):
    _, (alpha, beta, _) = three_topics
    assert store.topics.by_ids(2, [alpha["id"], beta["id"]]) == []
    assert store.messages.of_topic(2, alpha["id"]) == []
    assert [topic["id"] for topic in store.topics.by_ids(1, [beta["id"], alpha["id"]])] == [
        beta["id"],
        alpha["id"],
    ]


@pytest.mark.parametrize("huge", [2**63, -(2**63) - 1, 10**23])
def test_ids_outside_sqlites_integers_are_unknown_ids(
    store: RelationalStore, three_topics, huge: int
):
    """A model's (or a forged button's) id past 64 bits is refused like any unknown id:
    lookups leave it out, changes raise StoreError, never OverflowError."""
    _, (alpha, beta, _) = three_topics
    fact = store.facts.add(1, "Likes tea", "context", 50)
    person = store.people.add(1, "Anna")
    before = (store.topics.all_of(1), store.people.all_of(1))
    assert [t["id"] for t in store.topics.by_ids(1, [huge, alpha["id"]])] == [alpha["id"]]
    assert [f["id"] for f in store.facts.by_ids(1, [fact["id"], huge])] == [fact["id"]]
    assert store.people.by_ids(1, [huge]) == [] and store.messages.by_ids(1, [huge]) == []
    assert store.messages.of_topic(1, huge) == [] and store.answers.get(1, huge) is None
    assert store.messages.external_ids_by_topic(1, [huge]) == {huge: []}
    for refused in (
        lambda: store.facts.get(1, huge),
        lambda: store.facts.update(1, huge, content="Hijacked"),
        lambda: store.facts.delete(1, huge),
        lambda: store.topics.get(1, huge),
        lambda: store.topics.delete(1, huge),
        lambda: store.topics.merge(1, huge, beta["id"], "merged"),
        lambda: store.people.merge(1, huge, person["id"]),
    ):
        with pytest.raises(StoreError):
            refused()
    store.topics.mark_facts_extracted(1, [huge])
    assert (store.topics.all_of(1), store.people.all_of(1)) == before
    assert store.facts.all_of(1) == [fact]


@pytest.mark.stores("sqlite")  # SQLite's planner, without statistics
def test_lookups_by_id_take_the_primary_key_without_planner_statistics(
    store: RelationalStore, three_topics
):
    """Never ANALYZEd, SQLite would answer `user_id = ? AND id IN (...)` by scanning all
    of the user's rows through a user_id index; the lookups must take the primary key."""
    rows, topics = three_topics
    statements: list[str] = []
    store.db._db.set_trace_callback(statements.append)
    try:
        store.topics.by_ids(1, [topic["id"] for topic in topics])
        store.messages.by_ids(1, ids(rows))
        store.facts.by_ids(1, [1, 2])
        store.people.by_ids(1, [1, 2])
    finally:
        store.db._db.set_trace_callback(None)
    assert len(statements) == 4
    assert not store.db.rows("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
    for statement in statements:
        plan = " | ".join(row[3] for row in store.db.rows(f"EXPLAIN QUERY PLAN {statement}"))
        assert "USING INTEGER PRIMARY KEY" in plan, (statement, plan)
        assert "USING INDEX" not in plan, (statement, plan)


@pytest.mark.stores("sqlite")  # SQLite's planner, without statistics
def test_whether_memory_holds_a_word_is_asked_of_the_full_text_index_first(
    store: RelationalStore, three_topics
):
    """Led by the user's index of messages, SQLite would look the word up in the full-text
    index once per message of the user (35 ms a word at 25,000 messages)."""
    statements: list[str] = []
    store.db._db.set_trace_callback(statements.append)
    try:
        assert store.messages.archived_holding(1, ["messages", "marzipan"]) == [True, False]
        assert store.attachments.archived_holding(1, ["message"]) == [False]
    finally:
        store.db._db.set_trace_callback(None)
    statements = [s for s in statements if s.startswith("SELECT EXISTS")]  # not FTS5's own
    assert len(statements) == 2
    assert store.messages.archived_holding(2, ["message"]) == [False]  # another user's words
    for statement in statements:
        plan = [row[3] for row in store.db.rows(f"EXPLAIN QUERY PLAN {statement}")]
        scans = [n for n, step in enumerate(plan) if "VIRTUAL TABLE" in step]
        rows = [n for n, step in enumerate(plan) if "r USING INTEGER PRIMARY KEY" in step]
        assert scans and rows and scans[0] < rows[0], (statement, plan)
        assert not any("USING INDEX" in step and " r " in f" {step} " for step in plan), plan


# -- facts -------------------------------------------------------------------------


def test_facts_add_update_delete_each_leave_a_history_row(store: RelationalStore):
    fact = store.facts.add(1, "Runs 40 km a week", "context", 40, topic_id=3, reason="said so")
    updated = store.facts.update(1, fact["id"], content="Runs 45 km a week", importance=55)
    removed = store.facts.delete(1, fact["id"], reason="stopped running")

    assert (updated["content"], updated["importance"], updated["type"]) == (
        "Runs 45 km a week",
        55,
        "context",
    )
    assert removed == updated
    assert store.facts.all_of(1) == []
    history = [
        (row["fact_id"], row["action"], row["old_content"], row["new_content"], row["reason"])
        for row in store.facts.history(1)
    ]
    assert history == [
        (fact["id"], "add", None, "Runs 40 km a week", "said so"),
        (fact["id"], "update", "Runs 40 km a week", "Runs 45 km a week", None),
        (fact["id"], "delete", "Runs 45 km a week", None, "stopped running"),
    ]
    assert [(row["old_importance"], row["new_importance"]) for row in store.facts.history(1)] == [
        (None, 40),
        (40, 55),
        (55, None),
    ]


def test_facts_of_another_user_are_refused_and_left_unchanged(store: RelationalStore):
    theirs = store.facts.add(2, "Has a dog", "identity", 90)

    with pytest.raises(StoreError):
        store.facts.update(1, theirs["id"], content="Has a cat")
    with pytest.raises(StoreError):
        store.facts.delete(1, theirs["id"])
    with pytest.raises(StoreError):
        store.facts.get(1, theirs["id"])

    assert store.facts.get(2, theirs["id"]) == theirs
    assert store.facts.by_ids(1, [theirs["id"]]) == []
    assert store.facts.history(1) == []
    assert [row["action"] for row in store.facts.history(2)] == ["add"]


@pytest.mark.parametrize(
    ("content", "fact_type", "importance"),
    [("   ", "context", 50), ("x", "opinion", 50), ("x", "status", 101), ("x", "status", -1)],
)
def test_invalid_facts_are_refused(store: RelationalStore, content, fact_type, importance):
    with pytest.raises(StoreError):
        store.facts.add(1, content, fact_type, importance)
    assert store.facts.all_of(1) == []
    assert store.facts.history(1) == []


def test_core_facts_are_identity_or_very_important(store: RelationalStore):
    identity = store.facts.add(1, "Name is Alexei", "identity", 30)
    vital = store.facts.add(1, "Allergic to penicillin", "status", 95)
    store.facts.add(1, "Likes sci-fi", "context", 60)
    store.facts.add(2, "Name is Ira", "identity", 99)

    assert [fact["id"] for fact in store.facts.core(1)] == [vital["id"], identity["id"]]


# -- people ------------------------------------------------------------------------


def test_people_add_update_and_merge(store: RelationalStore):
    petra = store.people.add(1, "Petra", ["Petra K."], "petra_k", "work", "Tech lead")
    updated = store.people.update(1, petra["id"], aliases=["P."], bio="Senior tech lead")
    duplicate = store.people.add(1, "Petra Krause", ["PK"], None, None, "Reviews my PRs")

    assert updated["aliases"] == ["P.", "Petra K."]
    assert (updated["username"], updated["circle"], updated["bio"]) == (
        "petra_k",
        "work",
        "Senior tech lead",
    )

    merged = store.people.merge(1, duplicate["id"], petra["id"])

    assert merged["name"] == "Petra"
    assert merged["aliases"] == ["P.", "PK", "Petra K.", "Petra Krause"]
    assert merged["bio"] == "Senior tech lead\nReviews my PRs"
    assert [person["id"] for person in store.people.all_of(1)] == [petra["id"]]
    with pytest.raises(StoreError):
        store.people.get(1, duplicate["id"])


def test_people_of_another_user_are_refused(store: RelationalStore):
    mine = store.people.add(1, "Ira")
    theirs = store.people.add(2, "Oleg", bio="Brother")

    with pytest.raises(StoreError):
        store.people.update(1, theirs["id"], bio="changed")
    with pytest.raises(StoreError):
        store.people.merge(1, theirs["id"], mine["id"])
    with pytest.raises(StoreError):
        store.people.merge(1, mine["id"], theirs["id"])
    with pytest.raises(StoreError):
        store.people.add(1, "  ")

    assert store.people.get(2, theirs["id"]) == theirs
    assert store.people.all_of(1) == [mine]
    assert store.people.by_ids(1, [theirs["id"], mine["id"]]) == [mine]


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
