"""The inbox service on real SQLite: each incoming message takes its path.

A new message is `stored` (and handed on), its redelivery is a `duplicate`, a redelivered
question whose answer was stored but never sent is a `resend` (sent once), and a message
an earlier run stored and never answered is `stored` again, once.
"""

from __future__ import annotations

from typing import Any

from app.inbox import Inbox, Receipt, stored_id
from core.deps import Deps
from core.records import REPLY_PREFIX, MessageRow, NewMessage

USER = 7
"""A private chat's id is its user's id."""
MOMENT = "2026-11-27T01:00:00+00:00"


def telegram_message(number: int, text: str) -> NewMessage:
    return NewMessage(
        external_id=stored_id(USER, number), role="user", content=text, created_at=MOMENT
    )


class Chat:
    """An inbox and what it resent to the chat."""

    def __init__(self, deps: Deps) -> None:
        self.inbox = Inbox(deps)
        self.resent: list[str] = []

    async def resend(self, answer: MessageRow, on_sent: Any) -> None:
        self.resent.append(answer["content"])
        await on_sent()

    async def receive(self, number: int, text: str, *, private: bool = True) -> Receipt:
        message = telegram_message(number, text)
        return await self.inbox.receive(USER, USER, message, private=private, resend=self.resend)


def store_answer(deps: Deps, question: MessageRow, text: str) -> None:
    reply = NewMessage(
        external_id=f"{REPLY_PREFIX}{question['id']}",
        role="assistant",
        content=text,
        created_at=MOMENT,
    )
    deps.store.messages.add(USER, [reply])


async def test_a_new_message_a_redelivery_and_a_resend_each_take_their_path(deps: Deps):
    chat = Chat(deps)
    new = await chat.receive(1, "Лиза переехала в Казань")
    assert new.outcome == "stored"
    assert new.row == deps.store.messages.by_external_id(USER, stored_id(USER, 1))

    redelivered = await chat.receive(1, "Лиза переехала в Казань")
    assert (redelivered.outcome, redelivered.row["id"]) == ("duplicate", new.row["id"])
    assert [row["id"] for row in deps.store.messages.all_of(USER)] == [new.row["id"]]

    store_answer(deps, new.row, "Запомнил: Лиза в Казани.")  # stored, never sent
    resent = await chat.receive(1, "Лиза переехала в Казань")
    assert (resent.outcome, chat.resent) == ("resend", ["Запомнил: Лиза в Казани."])
    assert deps.store.answers.undelivered(USER, stored_id(USER, 1)) is None

    once_more = await chat.receive(1, "Лиза переехала в Казань")
    assert (once_more.outcome, chat.resent) == ("duplicate", ["Запомнил: Лиза в Казани."])

    second = await chat.receive(2, "А Борис?")
    assert second.outcome == "stored" and second.row["id"] != new.row["id"]
    assert chat.resent == ["Запомнил: Лиза в Казани."]


async def test_a_message_an_earlier_run_never_answered_is_answered_once(deps: Deps):
    earlier = Chat(deps)
    assert (await earlier.receive(1, "first")).outcome == "stored"
    answered = (await earlier.receive(2, "second")).row
    store_answer(deps, answered, "an answer")
    deps.store.answers.mark_delivered(USER, deps.store.messages.all_of(USER)[-1]["id"])
    assert (await earlier.receive(3, "third, never answered")).outcome == "stored"

    restarted = Chat(deps)  # the process died mid-turn; Telegram redelivers everything
    outcomes = [(await restarted.receive(n, text)).outcome for n, text in enumerate(
        ["first", "second", "third, never answered"], start=1
    )]  # fmt: skip
    assert outcomes == ["duplicate", "duplicate", "stored"]
    assert (await restarted.receive(3, "third, never answered")).outcome == "duplicate"
    assert restarted.resent == []


async def test_start_up_pickup_makes_their_redelivery_a_duplicate(deps: Deps):
    await Chat(deps).receive(1, "left unanswered")
    restarted = Chat(deps)
    picked = await restarted.inbox.pickup(USER, USER)
    assert [row["external_id"] for row in picked] == [stored_id(USER, 1)]
    assert (await restarted.receive(1, "left unanswered")).outcome == "duplicate"


async def test_a_group_chat_message_is_stored_once_and_never_resent(deps: Deps):
    chat = Chat(deps)
    first = await chat.receive(1, "в группе", private=False)
    assert first.outcome == "stored"
    store_answer(deps, first.row, "never sent")
    assert (await chat.receive(1, "в группе", private=False)).outcome == "duplicate"
    assert chat.resent == []


async def test_an_edit_that_overtook_its_message_is_in_the_row_the_turn_receives(deps: Deps):
    chat = Chat(deps)
    held = await chat.inbox.edit(USER, USER, stored_id(USER, 1), "встреча в среду")
    assert held is None
    received = await chat.receive(1, "встреча во вторник")
    assert (received.outcome, received.row["content"]) == ("stored", "встреча в среду")
    assert deps.store.messages.by_external_id(USER, stored_id(USER, 1)) == received.row
