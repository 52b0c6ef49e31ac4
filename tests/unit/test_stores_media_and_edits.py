"""The store's side of issue 14: edited messages (history kept, full text follows, the
topic marked for summarising again), documents kept as attachments in passages, and
forgetting a topic taking its passages with it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.errors import StoreError
from core.records import NewMessage
from stores.relational import RelationalStore


def pending(store: RelationalStore, user_id: int, kind: str) -> list[int]:
    return store.vector_queue.pending(user_id, kind)


def test_an_edit_replaces_the_text_keeps_its_history_and_requeues_the_vector(
    store: RelationalStore, make_messages: Callable[..., list[NewMessage]]
) -> None:
    [row] = store.messages.add(1, make_messages(["My locker code is 4417"]))
    store.vector_queue.clear(1, "messages", [row["id"]])

    edited = store.messages.rewrite(1, row["id"], "My locker code is 9023", edit=True)

    assert edited is not None and edited["content"] == "My locker code is 9023"
    [edit] = store.messages.edits(1, row["id"])
    assert (edit["old_content"], edit["new_content"]) == (
        "My locker code is 4417",
        "My locker code is 9023",
    )
    assert [i for i, _ in store.messages.search(1, "9023", 5)] == [row["id"]]
    assert store.messages.search(1, "4417", 5) == []
    assert pending(store, 1, "messages") == [row["id"]]


def test_a_rewrite_without_edit_keeps_no_history_and_other_users_are_untouched(
    store: RelationalStore, make_messages: Callable[..., list[NewMessage]]
) -> None:
    [row] = store.messages.add(1, make_messages(["[voice message, 3 s]"]))
    assert store.messages.rewrite(2, row["id"], "stolen", edit=True) is None
    store.messages.rewrite(1, row["id"], "[voice message, 3 s] hello there", edit=False)
    assert store.messages.edits(1, row["id"]) == []
    assert store.messages.by_ids(1, [row["id"]])[0]["content"].endswith("hello there")


def test_an_edit_of_an_archived_message_marks_its_topic_until_summarised_again(
    store: RelationalStore, make_messages: Callable[..., list[NewMessage]]
) -> None:
    rows = store.messages.add(1, make_messages(["We meet at the bakery", "At nine"]))
    [topic] = store.topics.save(1, [("Meeting at the bakery at nine", [r["id"] for r in rows])])
    assert store.topics.stale(1) == []
    store.messages.rewrite(1, rows[1]["id"], "At ten", edit=True)
    assert [t["id"] for t in store.topics.stale(1)] == [topic["id"]]
    assert store.topics.users_with_stale() == [1]
    assert store.topics.stale(2) == []

    assert store.topics.search(1, "bakery nine", 5) == [], "the old summary is not searched"
    other = store.messages.add(2, make_messages(["We meet at the bakery"]))
    [kept] = store.topics.save(2, [("Meeting at the bakery at nine", [other[0]["id"]])])
    assert [i for i, _ in store.topics.search(2, "bakery nine", 5)] == [kept["id"]]

    store.vector_queue.clear(1, "topics", [topic["id"]])
    again = store.topics.resummarise(1, topic["id"], "Meeting at the bakery at ten")
    assert [i for i, _ in store.topics.search(1, "bakery ten", 5)] == [topic["id"]]
    assert again["summary"] == "Meeting at the bakery at ten"
    assert again["size_chars"] == len("We meet at the bakery") + len("At ten")
    assert store.topics.stale(1) == []
    assert pending(store, 1, "topics") == [topic["id"]]
    with pytest.raises(StoreError):
        store.topics.resummarise(2, topic["id"], "not yours")


def test_a_document_is_kept_in_passages_found_by_full_text(
    store: RelationalStore, make_messages: Callable[..., list[NewMessage]]
) -> None:
    [row] = store.messages.add(1, make_messages(["[document: lease.txt]"]))
    attachment = store.attachments.add(
        1,
        row["id"],
        "lease.txt",
        "text/plain",
        "The rent is due on the fifth. The landlord is Mr Okafor.",
        ["The rent is due on the fifth.", "The landlord is Mr Okafor.", "  "],
    )
    assert attachment["name"] == "lease.txt"
    passages = store.attachments.passages_of_messages(1, [row["id"]])
    assert [p["content"] for p in passages] == [
        "The rent is due on the fifth.",
        "The landlord is Mr Okafor.",
    ]
    assert {p["name"] for p in passages} == {"lease.txt"}
    assert [i for i, _ in store.attachments.search(1, "landlord Okafor", 5)] == [passages[1]["id"]]
    assert store.attachments.search(2, "landlord Okafor", 5) == []
    assert pending(store, 1, "passages") == [p["id"] for p in passages]
    with pytest.raises(StoreError):
        store.attachments.add(2, row["id"], "x.txt", "text/plain", "x", ["x"])


def test_forgetting_a_topic_forgets_its_documents_passages(
    store: RelationalStore, make_messages: Callable[..., list[NewMessage]]
) -> None:
    [row] = store.messages.add(1, make_messages(["[document: lease.txt]"]))
    store.attachments.add(1, row["id"], "lease.txt", "text/plain", "x", ["The landlord is Okafor"])
    [passage_id] = pending(store, 1, "passages")
    store.vector_queue.clear(1, "passages", [passage_id])
    [topic] = store.topics.save(1, [("A lease", [row["id"]])])

    store.topics.delete(1, topic["id"])

    assert store.attachments.passages_by_ids(1, [passage_id]) == []
    assert store.attachments.search(1, "Okafor", 5) == []
    assert pending(store, 1, "passages") == [passage_id]
