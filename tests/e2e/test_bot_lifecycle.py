"""The bot's lifecycle and memory end to end: shutdown, restarts, webhooks and the memory
worker, with aiogram ↔ the fake Bot API server over HTTP on 127.0.0.1
(`tests.support.running_bot`), real SQLite and Chroma, the real local embedder and turn.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from bot.app import build_bot, build_dispatcher, make_turn, run_webhook
from core.deps import Deps
from tests.support.bot_api_server import FakeBotAPI
from tests.support.paths import ROOT
from tests.support.processes import free_port
from tests.support.running_bot import ALICE, MALLORY, ToolFreeModel

pytestmark = pytest.mark.timeout(90)


# -- lifecycle and memory -----------------------------------------------------------------


async def test_shutdown_with_a_pending_group_loses_nothing(start_bot) -> None:
    running = await start_bot(turn_wait_s=60.0)
    api = running.api
    first = api.send_text(ALICE, "I'm moving to Berlin next month.")
    second = api.send_text(ALICE, "Any tips for finding a flat?")
    await api.wait_until(
        lambda: running.deps.store.messages.count(ALICE.id) == 2, what="both messages stored"
    )
    assert api.sent_messages(ALICE.id) == [], "the group is still waiting for quiet"

    started = time.monotonic()
    await running.stop()
    assert time.monotonic() - started < 20, "the pending group was flushed, not waited out"

    [reply] = api.sent_messages(ALICE.id)
    assert reply.params["reply_parameters"]["message_id"] == second["message_id"]
    [turn] = running.turns
    assert turn["text"] == f"{first['text']}\n\n{second['text']}"
    assert [row["role"] for row in running.stored(ALICE)] == ["user", "user", "assistant"]
    confirm = api.calls_of("getUpdates")[-1]
    assert int(confirm.params["offset"]) > max(api.enqueued_at)
    assert api.pending_updates() == 0, "handled updates are confirmed to Telegram"


async def test_worker_archives_a_stale_session_into_topics(start_bot) -> None:
    running = await start_bot(
        worker_interval_s=0.3, chunk_interval=timedelta(seconds=2), turn_wait_s=0.1
    )
    api = running.api
    lines = [
        "I'm learning to bake sourdough bread.",
        "My starter is called Bubbles and lives in the fridge.",
        "The last loaf came out too dense, maybe the dough was underproofed.",
    ]
    for index, line in enumerate(lines):
        api.send_text(ALICE, line)
        await running.reply_to(ALICE, index + 1)
    store = running.deps.store

    worker = running.worker
    assert worker is not None
    await api.wait_until(
        lambda: worker.completed_runs and not store.messages.unarchived(ALICE.id),
        within_s=30,
        what="the session archived",
    )
    topics = store.topics.all_of(ALICE.id)
    members = store.messages.external_ids_by_topic(ALICE.id, [topic["id"] for topic in topics])
    archived = sorted(external for ids in members.values() for external in ids)
    rows = running.stored(ALICE)
    # Only the conversation becomes memory; the bot's memory-only replies (no model here)
    # stay in the log, unarchived (issue 14).
    assert archived == sorted(row["external_id"] for row in rows if row["kind"] == "conversation")
    assert {row["kind"] for row in rows if row["role"] == "assistant"} == {"memory_only_answer"}
    assert any("sourdough" in topic["summary"].lower() for topic in topics)
    assert running.deps.vectors.count("topics", ALICE.id) == len(topics)


@asynccontextmanager
async def webhook_bot(
    api: FakeBotAPI, make_deps: Callable[..., Deps], responder: Any = None
) -> AsyncIterator[Deps]:
    """The bot in webhook mode (no secret configured) for ALICE, until the block ends."""
    port = free_port()
    deps = make_deps(
        models={"responder": responder} if responder is not None else None,
        telegram_token=api.token,
        telegram_api_url=api.base_url,
        allowed_user_ids=str(ALICE.id),
        turn_wait_s=0.1,
        webhook_url=f"http://127.0.0.1:{port}/telegram/hook",
        webhook_port=port,
    )
    dispatcher = build_dispatcher(deps, deps.settings, turn=make_turn(deps, None))
    stop = asyncio.Event()
    server = asyncio.create_task(
        run_webhook(dispatcher, build_bot(deps.settings), deps.settings, stop=stop)
    )
    await api.wait_until(lambda: api.webhook_url, what="setWebhook")
    try:
        yield deps
    finally:
        stop.set()
        await server


async def test_webhook_mode_checks_the_secret_token(make_deps) -> None:
    async with FakeBotAPI() as api, webhook_bot(api, make_deps) as deps:
        assert api.webhook_secret, "a secret token is generated when none is configured"

        sent = api.send_text(ALICE, "hello over the webhook")
        [reply] = await api.wait_for_sent(ALICE.id, 1)
        assert reply.params["reply_parameters"]["message_id"] == sent["message_id"]

        api.webhook_secret = "forged"
        api.send_text(ALICE, "a forged update")
        await api.wait_until(lambda: 401 in api.webhook_statuses, what="the forged update refused")

    assert deps.store.messages.all_of(ALICE.id)[0]["content"] == sent["text"]
    assert deps.store.messages.count(ALICE.id) == 2


async def test_webhook_mode_sends_a_one_message_answer_in_the_response(make_deps) -> None:
    """The answer rides on the webhook's response (Telegram runs it and acknowledges the
    update at once), so no kill can fall between sending it and recording it; an answer
    longer than one message is sent with calls."""
    paragraph = "**Lisbon** tip: take tram 28 early, before 9 am it's quiet. " * 12
    long_answer = "\n\n".join(f"{index}. {paragraph}" for index in range(20))
    short_answer = "Your starter is called **Bubbles**."
    model = ToolFreeModel(
        messages=iter([AIMessage(content=short_answer)] + [AIMessage(content=long_answer)] * 3)
    )
    async with FakeBotAPI() as api, webhook_bot(api, make_deps, responder=model) as deps:
        question = api.send_text(ALICE, "What is my starter called?")
        [reply] = await api.wait_for_sent(ALICE.id, 1)
        assert reply.in_webhook_response, "the one-message answer is the webhook's response"
        assert reply.params["text"] == "Your starter is called <b>Bubbles</b>."
        assert reply.params["parse_mode"] == "HTML"
        assert reply.params["reply_parameters"]["message_id"] == question["message_id"]
        assert reply.params["reply_markup"]["inline_keyboard"], "its Sources button too"
        await api.wait_until(
            lambda: (
                deps.store.answers.undelivered(ALICE.id, f"tg-{ALICE.id}-{question['message_id']}")
                is None
            ),
            what="the answer recorded as delivered once the response was written",
        )
        assert not api.calls_of("sendMessage", ok_only=False)[:-1]

        api.send_text(ALICE, "Give me every tip you have about Lisbon.")
        await api.wait_until(lambda: len(api.sent_messages(ALICE.id)) > 2, what="a long answer")
        parts = api.sent_messages(ALICE.id)[1:]
        assert not any(call.in_webhook_response for call in parts), "several messages: calls"

    stored = deps.store.messages.all_of(ALICE.id)
    assert [row["role"] for row in stored] == ["user", "assistant", "user", "assistant"]
    assert [answer["message_id"] for answer in deps.store.answers.all_of(ALICE.id)] == [
        stored[1]["id"],
        stored[3]["id"],
    ]
    for row in (stored[0], stored[2]):
        assert deps.store.answers.undelivered(ALICE.id, row["external_id"]) is None


RUN_BOT = """
import asyncio
from bot.app import run_bot
from core.settings import Settings
from stores.services import build_deps

settings = Settings(_env_file=None)
deps = build_deps(settings)
try:
    asyncio.run(run_bot(deps, settings))
finally:
    deps.close()
"""


async def test_run_bot_process_answers_and_shuts_down_on_sigterm(tmp_path, make_deps) -> None:
    async with FakeBotAPI() as api:
        environment = {
            **os.environ,
            "TOPICA_TELEGRAM_TOKEN": api.token,
            "TOPICA_TELEGRAM_API_URL": api.base_url,
            "TOPICA_ALLOWED_USER_IDS": str(ALICE.id),
            "TOPICA_DATA_DIR": str(tmp_path / "data"),
            "TOPICA_TURN_WAIT_S": "0.2",
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", RUN_BOT, env=environment, cwd=ROOT
        )
        try:
            await api.wait_until(
                lambda: api.calls_of("getUpdates", ok_only=False), within_s=60, what="polling"
            )
            api.send_text(MALLORY, "let me in")
            api.send_text(ALICE, "Hello from a real process!")
            await api.wait_for_sent(ALICE.id, 1, within_s=30)
            api.send_text(ALICE, "And a message that is still waiting when we stop.")
            last = max(api.enqueued_at)
            await api.wait_until(
                lambda: any(
                    int(call.params.get("offset", 0)) > last for call in api.calls_of("getUpdates")
                ),
                what="the last update received",
            )
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), 60) == 0
        finally:
            if process.returncode is None:
                process.kill()
        assert len(api.sent_messages(ALICE.id)) == 2, "the pending message was answered"
        assert api.sent_messages(MALLORY.id) == []

    deps = make_deps(data_dir=tmp_path / "data")
    assert [row["role"] for row in deps.store.messages.all_of(ALICE.id)] == [
        "user",
        "assistant",
    ] * 2
    assert deps.store.messages.count(MALLORY.id) == 0
