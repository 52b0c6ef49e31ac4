"""Reminder offers in the store, on each engine: an offer hangs on its user's own message
(and goes with it), is stored once per message and request, is claimed for sending by
one caller only (given back after a passing failure), and is answered once, by its
user alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import StoreError
from core.records import NewMessage
from stores.relational import RelationalStore

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DUE = NOW + timedelta(days=1)


def said(store: RelationalStore, user_id: int, text: str, external_id: str) -> int:
    message = NewMessage(
        external_id=external_id, role="user", content=text, created_at=NOW.isoformat()
    )
    [row] = store.messages.add(user_id, [message])
    return row["id"]


def test_an_offer_hangs_on_its_users_own_message_once(store: RelationalStore):
    message = said(store, 1, "пришлю отчёт завтра", "m1")

    offer = store.offers.add(1, message, " прислать отчёт ", "завтра", DUE, "Europe/Moscow")

    assert offer is not None
    assert (offer["request"], offer["state"], offer["sent_at"]) == (
        "прислать отчёт",
        "offered",
        None,
    )
    assert offer["due_at"] == "2026-03-03T09:00:00+00:00"
    assert store.offers.add(1, message, "прислать отчёт", "завтра", DUE, "UTC") is None
    assert store.offers.of_user(1) == [offer]
    with pytest.raises(StoreError):
        store.offers.add(2, message, "чужое", "завтра", DUE, "UTC")
    with pytest.raises(StoreError):
        store.offers.add(1, message, "  ", "завтра", DUE, "UTC")
    assert store.offers.of_user(2) == [] and store.offers.get(2, offer["id"]) is None


def test_an_offer_is_claimed_for_sending_once(store: RelationalStore):
    ids = [
        store.offers.add(
            user, said(store, user, "I'll pay", f"m{user}"), "pay", "tomorrow", DUE, "UTC"
        )["id"]
        for user in range(1, 21)
    ]
    past = store.offers.add(1, said(store, 1, "old", "old"), "old", "today", NOW, "UTC")

    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda _: store.offers.claim_unsent(NOW, 50), range(4)))

    claimed = sorted(offer["id"] for batch in batches for offer in batch)
    assert claimed == sorted(ids), "each offer still ahead, once; the past one never"
    assert store.offers.get(1, past["id"])["sent_at"] is None
    store.offers.unsend(1, ids[0])
    assert [offer["id"] for offer in store.offers.claim_unsent(NOW, 50)] == [ids[0]]


def test_an_offer_is_answered_once_by_its_user(store: RelationalStore):
    offer = store.offers.add(1, said(store, 1, "I'll pay", "m1"), "pay", "tomorrow", DUE, "UTC")

    assert store.offers.answer(2, offer["id"], "accepted", 7) is None
    accepted = store.offers.answer(1, offer["id"], "accepted", 7)
    assert (accepted["state"], accepted["task_id"]) == ("accepted", 7)
    assert store.offers.answer(1, offer["id"], "dismissed") is None
    with pytest.raises(StoreError):
        store.offers.answer(1, offer["id"], "offered")
    assert store.offers.claim_unsent(NOW, 10) == [], "an answered offer is not sent"


def test_forgetting_removes_the_users_offers_only(store: RelationalStore):
    kept = store.offers.add(2, said(store, 2, "I'll pay", "m2"), "pay", "tomorrow", DUE, "UTC")
    store.offers.add(1, said(store, 1, "I'll pay", "m1"), "pay", "tomorrow", DUE, "UTC")

    assert store.offers.forget(1) == 1
    assert store.offers.of_user(1) == [] and store.offers.of_user(2) == [kept]


def test_an_offer_goes_with_the_topic_of_its_message(store: RelationalStore):
    message = said(store, 1, "I'll pay", "m1")
    store.offers.add(1, message, "pay", "tomorrow", DUE, "UTC")
    [topic] = store.topics.save(1, [("Paying the rent", [message])])

    store.topics.delete(1, topic["id"])

    assert store.offers.of_user(1) == []
