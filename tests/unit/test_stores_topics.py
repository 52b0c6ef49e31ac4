"""The SQLite store's topics: saving, merging, lookups by id, each user's own.

Every test runs against a real SQLite file. The user-isolation tests give two
users the same data, so a missing `user_id` filter shows up as a wrong row.
"""

from __future__ import annotations

import pytest

from core.errors import StoreError
from stores.relational import RelationalStore
from tests.support.messages import ids, new_messages


def topic_rows_count(store: RelationalStore) -> int:
    return store.db.rows("SELECT COUNT(*) FROM topics")[0][0]


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
