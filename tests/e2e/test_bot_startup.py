"""The bot's start-up (issue 15, load): the encoder is loaded and the vector store
connected before the first update, not by the first user's turn; what is alive then is
frozen out of the garbage collector's view while the bot runs, and thawed at shutdown;
the Bot API's response models are kept from their first use. A vector store that is
down at start-up is only logged."""

from __future__ import annotations

import gc
import logging
import weakref
from pathlib import Path
from typing import Any

import pytest
from aiogram.methods import Response, SendMessage

from stores.embedders import build_embedder
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.processes import free_port
from tests.support.services import closing_each, isolated_settings, local_deps

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")


async def test_start_up_loads_the_encoder_and_freezes_the_heap_until_shutdown(tmp_path: Path):
    embedder = build_embedder(isolated_settings(tmp_path / "unused"))  # not loaded yet
    assert gc.get_freeze_count() == 0

    with closing_each(
        lambda **settings: local_deps(tmp_path / "data", embedder, **settings)
    ) as make:
        async with running_bot(make, [ALICE], turn_wait_s=0.05) as running:
            assert embedder.model.loaded, "loaded before the first update"
            assert embedder.batcher.calls == 0, "by loading, not by encoding"
            assert gc.get_freeze_count() > 0

            running.api.send_text(ALICE, "Hello! My cat is called Marzipan.")
            await running.api.wait_for_sent(ALICE.id, 1, within_s=30)
            assert [m["role"] for m in running.deps.store.messages.all_of(ALICE.id)] == [
                "user",
                "assistant",
            ]
            # The answer's response model was built after the freeze, and is kept.
            answered = weakref.ref(Response[SendMessage.__returning__])  # type: ignore[name-defined]
            gc.collect()
            assert answered() is not None, "the bot's session keeps its response models"

    assert gc.get_freeze_count() == 0, "thawed at shutdown"


async def test_a_vector_store_down_at_start_up_is_logged_and_the_bot_still_answers(
    make_deps: Any, caplog: pytest.LogCaptureFixture
):
    nobody = free_port()
    with caplog.at_level(logging.WARNING, logger="bot.app"):
        async with running_bot(
            make_deps, [ALICE], turn_wait_s=0.05, chroma_host="127.0.0.1", chroma_port=nobody
        ) as running:
            assert any(
                "vector store is not ready at start-up" in record.getMessage()
                for record in caplog.records
            )
            running.api.send_text(ALICE, "Hello! My cat is called Marzipan.")
            await running.api.wait_for_sent(ALICE.id, 1, within_s=30)
            stored = running.deps.store.messages.all_of(ALICE.id)
            assert [m["content"] for m in stored if m["role"] == "user"] == [
                "Hello! My cat is called Marzipan."
            ]
            assert [m["role"] for m in stored] == ["user", "assistant"]
