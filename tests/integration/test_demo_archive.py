"""The example session ingested into real SQLite + Chroma twice, for two users.

The expensive ingest runs once per test session (`demo_archive` in conftest.py);
these tests only read what it left behind.
"""

from __future__ import annotations

import pytest

# The first test to ask for `demo_archive` pays for ingesting the session twice per user.
pytestmark = pytest.mark.timeout(300)

MESSAGES = 196


@pytest.fixture(params=[1, 2], ids=["user-1", "user-2"])
def user_id(request) -> int:
    return request.param


def test_every_message_is_stored_once_per_user(demo_archive, user_id):
    store = demo_archive.deps.store
    assert demo_archive.stored_first[user_id] == MESSAGES
    assert store.messages.count(user_id) == MESSAGES
    assert [m["external_id"] for m in store.messages.all_of(user_id)] == demo_archive.external_ids
    assert [m["seq"] for m in store.messages.all_of(user_id)] == list(range(1, MESSAGES + 1))
    assert demo_archive.deps.vectors.count("messages", user_id) == MESSAGES


def test_every_message_ends_in_exactly_one_of_its_users_topics(demo_archive, user_id):
    store = demo_archive.deps.store
    topics = store.topics.all_of(user_id)
    own_ids = {m["id"] for m in store.messages.all_of(user_id)}
    seen: list[int] = []
    for topic in topics:
        members = store.messages.of_topic(user_id, topic["id"])
        assert members, f"topic {topic['id']} has no messages"
        assert topic["message_count"] == len(members)
        assert topic["size_chars"] == sum(len(m["content"]) for m in members)
        seen.extend(m["id"] for m in members)
    assert sorted(seen) == sorted(own_ids)
    assert len(seen) == len(set(seen))
    assert store.messages.unarchived(user_id) == []


def test_the_second_ingest_stores_nothing_and_creates_no_topics(demo_archive, user_id):
    store = demo_archive.deps.store
    assert demo_archive.stored_second[user_id] == 0
    assert demo_archive.chunks_second[user_id] == []
    assert [topic["id"] for topic in store.topics.all_of(user_id)] == demo_archive.topic_ids_first[
        user_id
    ]
    assert store.messages.count(user_id) == MESSAGES


def test_the_first_ingest_ran_without_a_model_and_lost_nothing(demo_archive, user_id):
    chunks = demo_archive.chunks_first[user_id]
    assert chunks, "the session was archived"
    assert sum(len(state["chunk"]) for state in chunks) == MESSAGES
    for state in chunks:
        assert state["split_fallback"] == "no_model"
        assert state["coverage"]["uncovered"] == []
        assert state["facts"]["status"] == "skipped"


def test_the_two_users_are_isolated_and_archived_alike(demo_archive):
    store, vectors = demo_archive.deps.store, demo_archive.deps.vectors
    first = store.topics.all_of(1)
    second = store.topics.all_of(2)

    assert len(first) == len(second) >= 6
    assert {t["id"] for t in first}.isdisjoint({t["id"] for t in second})
    assert store.topics.by_ids(2, [t["id"] for t in first]) == []
    assert all(store.messages.of_topic(1, t["id"]) == [] for t in second)
    external = [
        store.messages.external_ids_by_topic(u, [t["id"] for t in ts])
        for u, ts in ((1, first), (2, second))
    ]
    assert list(external[0].values()) == list(external[1].values())
    assert [t["summary"] for t in first] == [t["summary"] for t in second]
    for user_id, topics in ((1, first), (2, second)):
        assert vectors.count("topics", user_id) == len(topics)
        assert set(vectors.vectors("topics", user_id, [t["id"] for t in topics])) == {
            t["id"] for t in topics
        }


def test_a_users_searches_never_reach_the_other_user(demo_archive, embedder):
    store, vectors = demo_archive.deps.store, demo_archive.deps.vectors
    own_messages = {m["id"] for m in store.messages.all_of(1)}
    own_topics = {t["id"] for t in store.topics.all_of(1)}

    found = store.messages.search(1, "Марципан почки корм", limit=50)
    assert found and {i for i, _ in found} <= own_messages
    query = embedder.encode_query("What did the vet say about the cat's kidneys?")
    nearest = vectors.query("topics", 1, query, limit=50)
    assert len(nearest) == len(own_topics)
    assert {i for i, _ in nearest} == own_topics
