"""What each answer was made from (`answers`, seed 003's `context_used`), on a real SQLite
file: recorded once per assistant message, read only by its user, gone with its message."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.errors import StoreError
from core.records import NewMessage
from stores.relational import RelationalStore

SOURCES = {"topics": [{"id": 4, "reason": "the vet", "excerpt": None}], "facts": [{"id": 2}]}


def conversation(store: RelationalStore, user_id: int, make_messages, prefix: str) -> list[int]:
    """A question and its answer of `user_id`; their row ids."""
    question, answer = make_messages(["What did the vet say?", "Rest for a week."], prefix=prefix)
    answer = NewMessage(**{**answer, "role": "assistant"})
    return [row["id"] for row in store.messages.add(user_id, [question, answer])]


def test_an_answer_is_recorded_once_and_read_back(store: RelationalStore, make_messages):
    _, answer_id = conversation(store, 1, make_messages, "a")

    store.answers.record(1, answer_id, SOURCES, answered_by="responder")
    again = store.answers.record(1, answer_id, SOURCES, answered_by="synthesis", partial=True)

    assert again == store.answers.get(1, answer_id)
    assert (again["answered_by"], again["partial"], again["context_used"]) == (
        "synthesis",
        True,
        SOURCES,
    )
    assert store.answers.all_of(1) == [again]


def test_latest_is_the_newest_answer_in_conversation_order(
    store: RelationalStore, make_messages: Callable
):
    _, first = conversation(store, 1, make_messages, "a")
    _, second = conversation(store, 1, make_messages, "b")
    store.answers.record(1, second, {"topics": []}, answered_by="memory")
    store.answers.record(1, first, SOURCES, answered_by="responder")

    latest = store.answers.latest(1)
    assert latest is not None and latest["message_id"] == second
    assert store.answers.latest(2) is None


def test_another_users_answer_is_neither_read_nor_written(store: RelationalStore, make_messages):
    _, mine = conversation(store, 1, make_messages, "a")
    question, theirs = conversation(store, 2, make_messages, "b")
    store.answers.record(2, theirs, SOURCES, answered_by="responder")

    assert store.answers.get(1, theirs) is None
    assert store.answers.all_of(1) == []
    with pytest.raises(StoreError):
        store.answers.record(1, theirs, {}, answered_by="responder")
    with pytest.raises(StoreError):
        store.answers.record(2, question, {}, answered_by="responder")  # not an answer
    assert store.answers.get(2, theirs)["context_used"] == SOURCES
    assert mine not in [answer["message_id"] for answer in store.answers.all_of(2)]


def test_the_record_goes_with_its_message(store: RelationalStore, make_messages):
    question, answer = conversation(store, 1, make_messages, "a")
    (topic,) = store.topics.save(1, [("The vet", [question, answer])])
    store.answers.record(1, answer, SOURCES, answered_by="responder")

    store.topics.delete(1, topic["id"])  # forgetting a topic deletes its messages

    assert store.answers.all_of(1) == []


def test_an_answer_is_undelivered_until_marked(store: RelationalStore, make_messages) -> None:
    question, answer = make_messages(["Which floor?", "The third."], prefix="d")
    (stored,) = store.messages.add(1, [question])
    answer = NewMessage(
        **{**answer, "role": "assistant", "external_id": f"reply-to-{stored['id']}"}
    )
    (answer_row,) = store.messages.add(1, [answer])
    answer_id = answer_row["id"]
    assert store.answers.undelivered(1, question["external_id"])["id"] == answer_id
    assert store.answers.undelivered(2, question["external_id"]) is None, "another user's"
    store.answers.mark_delivered(2, answer_id)  # another user's id changes nothing
    assert store.answers.undelivered(1, question["external_id"]) is not None
    store.answers.mark_delivered(1, answer_id)
    store.answers.mark_delivered(1, answer_id)  # twice is harmless
    assert store.answers.undelivered(1, question["external_id"]) is None
