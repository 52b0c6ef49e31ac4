"""The SQLite store's facts (with their history) and people, each user's own.

Every test runs against a real SQLite file. The user-isolation tests give two
users the same data, so a missing `user_id` filter shows up as a wrong row.
"""

from __future__ import annotations

import pytest

from core.errors import StoreError
from stores.relational import RelationalStore

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
