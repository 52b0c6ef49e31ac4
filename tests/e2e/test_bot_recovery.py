"""Every turn is answered exactly once, even when the bot stopped in the middle of one.

A message stored by an earlier run of the bot and never answered (the process died
mid-turn) is answered when Telegram redelivers its update, or at start-up; a second
redelivery, or one of a message answered already, is a duplicate and gets nothing.
In process: aiogram against the fake Bot API on loopback, real SQLite and Chroma.
The kill -9 of a real `topica bot` process mid-turn is `test_bot_crash.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.texts import ENGLISH
from core.deps import Deps
from core.records import NewMessage
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_harness import running_bot

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")


def store_as_the_bot_did(deps: Deps, message: dict[str, Any]) -> None:
    """What `StoreIncomingMiddleware` stored for this Telegram message before the crash."""
    deps.indexer.store_messages(
        message["from"]["id"],
        [
            NewMessage(
                external_id=f"tg-{message['chat']['id']}-{message['message_id']}",
                role="user",
                content=message["text"],
                created_at=datetime.fromtimestamp(message["date"], UTC).isoformat(),
                author=message["from"]["first_name"],
            )
        ],
    )


async def settled(api: FakeBotAPI) -> None:
    await api.wait_until(lambda: api.pending_updates() == 0, what="consumed")
    await asyncio.sleep(0.6)


async def test_a_redelivered_unanswered_message_is_answered_once(make_deps: Callable[..., Deps]):
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        api.send_text(ALICE, "an ordinary first turn")
        await api.wait_for_sent(ALICE.id, 1)
        # An earlier run stored this message and died before answering it.
        crashed = api._message(ALICE, text="what did I ask you to remember?")
        store_as_the_bot_did(deps, crashed)

        api._enqueue("message", crashed)
        [_, answer] = await api.wait_for_sent(ALICE.id, 2)
        api._enqueue("message", crashed)
        await settled(api)

        assert answer.params["reply_parameters"]["message_id"] == crashed["message_id"]
        assert answer.result["text"] != ENGLISH.turn_failed
        assert len(api.sent_messages(ALICE.id)) == 2, "the second redelivery got nothing"
        assert [turn.external_id for turn in running.turns] == [
            f"tg-{ALICE.id}-1",
            f"tg-{ALICE.id}-{crashed['message_id']}",
        ]
        stored = deps.store.messages.all_of(ALICE.id)
        assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
        assert deps.store.messages.unanswered(ALICE.id, f"tg-{ALICE.id}-") == []


async def test_unanswered_messages_are_answered_at_start_up(make_deps: Callable[..., Deps]):
    api = await FakeBotAPI().start()
    first = api._message(ALICE, text="the new flat has two balconies")
    second = api._message(ALICE, text="and which floor is it on?")
    await api.close()
    before = make_deps()
    for message in (first, second):
        store_as_the_bot_did(before, message)
    assert len(before.store.messages.unanswered(ALICE.id, f"tg-{ALICE.id}-")) == 2

    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        [answer] = await api.wait_for_sent(ALICE.id, 1, within_s=60)
        # Telegram then redelivers both updates, never confirmed by the stopped bot.
        for message in (first, second):
            api._enqueue("message", {**message, "chat": ALICE.chat(), "from": ALICE.as_dict()})
        await settled(api)

        assert answer.params["reply_parameters"]["message_id"] == second["message_id"]
        assert len(api.sent_messages(ALICE.id)) == 1, "answered once, the redeliveries nothing"
        [turn] = running.turns
        assert turn.external_id == f"tg-{ALICE.id}-{second['message_id']}"
        assert [m["role"] for m in deps.store.messages.all_of(ALICE.id)] == [
            "user",
            "user",
            "assistant",
        ]
        assert deps.store.messages.unanswered(ALICE.id, f"tg-{ALICE.id}-") == []


async def test_an_answer_stored_but_never_sent_is_sent_once_on_redelivery(
    make_deps: Callable[..., Deps],
):
    """The process died after storing its answer and before sending it: Telegram's
    redelivery gets that answer (no second turn), and a further redelivery nothing."""
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        crashed = api._message(ALICE, text="which floor is the new flat on?")
        store_as_the_bot_did(deps, crashed)
        (question,) = deps.store.messages.all_of(ALICE.id)
        (answer,) = deps.indexer.store_messages(
            ALICE.id,
            [
                NewMessage(
                    external_id=f"reply-to-{question['id']}",
                    role="assistant",
                    content="The **third** floor, you said.",
                    created_at=datetime.now(UTC).isoformat(),
                )
            ],
        )
        deps.store.answers.record(ALICE.id, answer["id"], {}, answered_by="memory")

        api._enqueue("message", crashed)
        [sent] = await api.wait_for_sent(ALICE.id, 1)
        api._enqueue("message", crashed)
        await settled(api)

        assert sent.params["reply_parameters"]["message_id"] == crashed["message_id"]
        assert "third" in sent.result["text"]
        assert len(api.sent_messages(ALICE.id)) == 1, "sent once"
        assert running.turns == [], "no turn: the stored answer was the answer"
        assert (
            deps.store.answers.undelivered(ALICE.id, f"tg-{ALICE.id}-{crashed['message_id']}")
            is None
        )
