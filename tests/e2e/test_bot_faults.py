"""Faults through the bot: a failing model and a Telegram 5xx, a turn that fails.

The bot in-process against the fake Bot API server on loopback, the model on the
scripted OpenAI-compatible server: the user always gets an answer (the memory-only one,
or the message that the turn failed) and their message is stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from app.memory import archive_user
from bot.texts import ENGLISH
from core.deps import Deps
from nodes.response.offline_answer import WORDING
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.conversations import CAT_QUESTION, CAT_TALK
from tests.support.faults import ENOUGH, chat_model
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI, http_error

pytestmark = pytest.mark.timeout(60)

ALICE = FakeUser(101, "Alice", "en")


async def test_the_bot_answers_through_a_failing_model_and_a_telegram_5xx(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """The responder is down and Telegram answers sendMessage with 502 once: the user gets
    the memory-only answer (the send retried), and the question and answer are stored."""
    server.script(*[http_error(500, "provider down")] * ENOUGH)
    async with running_bot(
        make_deps, [ALICE], models={"responder": chat_model(server)}, turn_wait_s=0.1
    ) as running:
        running.deps.indexer.store_messages(ALICE.id, new_messages(CAT_TALK, prefix="cat"))
        await archive_user(running.deps, ALICE.id, archive_all=True)
        running.api.fail_next("sendMessage", status=502)
        question = running.api.send_text(ALICE, CAT_QUESTION)

        [answer] = await running.api.wait_for_sent(ALICE.id, 1)

        assert [call.status for call in running.api.calls_of("sendMessage", ok_only=False)] == [
            502,
            200,
        ]
        assert answer.params["reply_parameters"]["message_id"] == question["message_id"]
        assert answer.result["text"].startswith(WORDING["en"].intro)
        stored = running.deps.store.messages.all_of(ALICE.id)[len(CAT_TALK) :]
        assert [(m["role"], m["content"]) for m in stored] == [
            ("user", CAT_QUESTION),
            ("assistant", running.turns[0].result["answer"]),
        ]


async def test_the_bot_says_so_when_a_turn_fails_and_keeps_the_message(
    make_deps: Callable[..., Deps], monkeypatch: pytest.MonkeyPatch
):
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(running.deps.store.topics, "search", unavailable)
        question = running.api.send_text(ALICE, CAT_QUESTION)

        [answer] = await running.api.wait_for_sent(ALICE.id, 1)

        assert answer.result["text"] == ENGLISH.turn_failed
        assert answer.params["reply_parameters"]["message_id"] == question["message_id"]
        stored = running.deps.store.messages.all_of(ALICE.id)
        assert [(m["external_id"], m["content"]) for m in stored] == [
            (f"tg-{ALICE.id}-{question['message_id']}", CAT_QUESTION)
        ]
