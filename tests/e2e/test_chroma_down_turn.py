"""The Chroma server stops during a conversation: turns are still answered.

A real `chroma run` process on loopback holds the vectors; the bot (aiogram on the fake
Bot API) answers Alice. With the server stopped, her question is answered from full-text
search alone: the answer recalls the conversation that holds it, the answer's sources and
the log say vectors were unavailable, and the question waits in the vector queue (the
answer, written with no model, is a memory-only answer: never memory, so never embedded).
Once the server is back, the next turn searches by vector again; the two questions, on
the chat's screen, wait in the queue (`Indexer.store_live`) until the memory run drains
it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from app.memory import archive_user
from bot.texts import ENGLISH
from core.deps import Deps
from core.records import MEMORY_KIND
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.chroma_server import ChromaServer
from tests.support.conversations import CAT_QUESTION, CAT_TALK, POSTGRES_TALK
from tests.support.messages import new_messages

pytestmark = pytest.mark.timeout(180)

ALICE = FakeUser(101, "Alice", "en")


def pending(deps: Deps) -> int:
    return len(deps.store.vector_queue.pending(ALICE.id, "messages"))


async def test_a_turn_is_answered_with_the_vector_store_down(
    make_deps: Callable[..., Deps],
    chroma: ChromaServer,
    caplog: pytest.LogCaptureFixture,
):
    async with running_bot(
        make_deps, [ALICE], turn_wait_s=0.1, chroma_host="127.0.0.1", chroma_port=chroma.port
    ) as running:
        api, deps = running.api, running.deps
        history = new_messages(CAT_TALK, prefix="cat") + new_messages(POSTGRES_TALK, prefix="pg")
        deps.indexer.store_messages(ALICE.id, history)
        await archive_user(deps, ALICE.id, archive_all=True)
        assert deps.vectors.count("messages", ALICE.id) == len(history)

        chroma.stop()
        with caplog.at_level(logging.WARNING):
            api.send_text(ALICE, CAT_QUESTION)
            [answer] = await api.wait_for_sent(ALICE.id, 1, within_s=60)

        text = answer.result["text"]
        assert text != ENGLISH.turn_failed
        assert "renal diet" in text, "full-text search alone recalled the cat conversation"
        [turn] = running.turns
        sources = deps.store.answers.get(ALICE.id, turn.result["answer_id"])["context_used"]
        assert sources["fallbacks"]["search"] == "vectors_unavailable"
        assert sources["topics"], "the answer was made from a recalled topic"
        assert any("vectors unavailable" in r.getMessage() for r in caplog.records)
        roles = [m["role"] for m in deps.store.messages.all_of(ALICE.id)[len(history) :]]
        assert roles == ["user", "assistant"]
        assert pending(deps) == 1, "the question waits to be embedded, the memory-only answer not"

        api.press_button(
            ALICE,
            answer.result,
            answer.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"],
        )
        shown = (await api.wait_for_sent(ALICE.id, 2))[-1]
        assert "the vector index was unavailable (vectors_unavailable)" in shown.result["text"]

        chroma.start()
        api.send_text(ALICE, "Thanks! And the water fountain?")
        await api.wait_for_sent(ALICE.id, 3, within_s=60)

        latest = deps.store.answers.latest(ALICE.id)["context_used"]
        assert "search" not in latest["fallbacks"]
        questions = [m["id"] for m in deps.store.messages.all_of(ALICE.id)[len(history) :]][::2]
        assert deps.store.vector_queue.pending(ALICE.id, "messages") == questions
        assert deps.vectors.count("messages", ALICE.id) == len(history)

        await archive_user(deps, ALICE.id, archive_all=True)
        assert pending(deps) == 0, "the memory run drained the queue"
        conversation = [m for m in deps.store.messages.all_of(ALICE.id) if m["kind"] == MEMORY_KIND]
        assert deps.vectors.count("messages", ALICE.id) == len(conversation)
