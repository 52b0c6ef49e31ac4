"""The bot end to end: aiogram ↔ the fake Bot API server over HTTP on 127.0.0.1.

Real SQLite and Chroma, the real local embedder, the real `run_turn` (response
graph) and `archive_user` (memory graph), no LLM configured unless a test says
so. Each test drives the user's side through the fake server and reads what
the bot sent back.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from aiogram import Bot, Dispatcher
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from app.turns import TurnRequest
from app.worker import MemoryWorker
from bot.app import build_bot, build_dispatcher, make_turn, run_polling, run_webhook
from bot.render import html_to_plain, markdown_to_html
from bot.splitting import split_message
from bot.texts import ENGLISH, RUSSIAN
from core.deps import Deps
from stores.checkpoints import durable_checkpointer
from tests.support.bot_api_server import ApiCall, FakeBotAPI, FakeUser, utf16_length
from tests.support.bot_harness import round_trips
from tests.support.hostile_files import small_pdf
from tests.support.paths import ROOT
from tests.support.processes import free_port

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
MALLORY = FakeUser(666, "Mallory", "en")


@dataclass
class RunningBot:
    api: FakeBotAPI
    deps: Deps
    bot: Bot
    dispatcher: Dispatcher
    task: asyncio.Task[None]
    turns: list[dict[str, Any]] = field(default_factory=list)
    worker: MemoryWorker | None = None

    async def stop(self) -> None:
        if not self.task.done():
            await self.dispatcher.stop_polling()
        await self.task

    def stored(self, user: FakeUser) -> list[dict[str, Any]]:
        return [dict(row) for row in self.deps.store.messages.all_of(user.id)]

    async def reply_to(self, user: FakeUser, count: int = 1) -> list[ApiCall]:
        return await self.api.wait_for_sent(user.id, count)


class ToolFreeModel(GenericFakeChatModel):
    """A scripted responder: accepts tools, never calls them."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolFreeModel:
        return self


@pytest_asyncio.fixture
async def start_bot(make_deps: Callable[..., Deps]) -> AsyncIterator[Callable[..., Any]]:
    running: list[RunningBot] = []

    async def start(
        *,
        models: dict[str, Any] | None = None,
        worker_interval_s: float | None = None,
        checkpointer: Any = None,
        **overrides: Any,
    ) -> RunningBot:
        api = await FakeBotAPI().start()
        settings = {
            "telegram_token": api.token,
            "telegram_api_url": api.base_url,
            "allowed_user_ids": f"{ALICE.id},{BORIS.id}",
            "turn_wait_s": 0.2,
            "shutdown_timeout_s": 20.0,
            **overrides,
        }
        deps = make_deps(models=models, **settings)
        bot = build_bot(deps.settings)
        real_turn = make_turn(deps, checkpointer)
        turns: list[dict[str, Any]] = []

        async def recorded_turn(request: TurnRequest) -> dict[str, Any]:
            record = {
                "user_id": request.user_id,
                "text": request.text,
                "parts": request.parts,
                "external_id": request.rows[-1]["external_id"],
            }
            turns.append(record)
            record["started"] = time.monotonic()
            record["result"] = await real_turn(request)
            record["finished"] = time.monotonic()
            return record["result"]

        worker = None
        if worker_interval_s is not None:
            worker = MemoryWorker(deps, interval_s=worker_interval_s, max_backoff_s=5.0)
        dispatcher = build_dispatcher(deps, deps.settings, turn=recorded_turn, worker=worker)
        task = asyncio.create_task(run_polling(dispatcher, bot, handle_signals=False))
        instance = RunningBot(api, deps, bot, dispatcher, task, turns, worker)
        running.append(instance)
        await api.wait_until(lambda: api.calls_of("getUpdates", ok_only=False), what="polling")
        return instance

    yield start
    for instance in running:
        await instance.stop()
        await instance.api.close()


# -- conversation ----------------------------------------------------------------------


def report(label: str, timings: list[float]) -> None:
    ordered = sorted(timings)
    print(
        f"\n{label}: median {statistics.median(ordered) * 1000:.0f} ms, "
        f"min {ordered[0] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms "
        f"over {len(ordered)} (turn_wait 200 ms included)"
    )


async def test_text_round_trip_replies_and_stores_both_sides(start_bot) -> None:
    running = await start_bot()
    api = running.api
    sent = api.send_text(ALICE, "I'm planning a trip to Lisbon in May with my sister Olga.")

    [reply] = await running.reply_to(ALICE)
    assert reply.params["parse_mode"] == "HTML"
    assert reply.params["reply_parameters"]["message_id"] == sent["message_id"]
    assert reply.result["text"].strip()
    assert api.calls_of("sendChatAction"), "typing is shown while the turn runs"
    rows = running.stored(ALICE)
    assert (rows[0]["role"], rows[0]["external_id"]) == (
        "user",
        f"tg-{ALICE.id}-{sent['message_id']}",
    )
    assert rows[0]["content"] == sent["text"]
    assert [row["role"] for row in rows] == ["user", "assistant"]
    assert rows[1]["content"].strip()

    timings = await round_trips(running.api, ALICE, 5)
    report("text round trip", timings)
    assert statistics.median(timings) < 10


async def test_round_trip_with_the_durable_checkpointer(start_bot, make_settings, tmp_path) -> None:
    async with durable_checkpointer(make_settings(tmp_path / "checkpoints")) as checkpointer:
        running = await start_bot(checkpointer=checkpointer)
        await round_trips(running.api, ALICE, 1)
        timings = await round_trips(running.api, ALICE, 5)
        await running.stop()
    report("text round trip, durable checkpointer", timings)
    assert len(running.turns) == 6


async def test_three_quick_messages_become_one_turn(start_bot) -> None:
    running = await start_bot(turn_wait_s=0.5)
    api = running.api
    messages = [
        api.send_text(ALICE, "My cat is called Mochi."),
        api.send_text(ALICE, "She is three years old."),
        api.send_text(ALICE, "What should I feed her?"),
    ]
    [reply] = await running.reply_to(ALICE)
    await asyncio.sleep(0.8)  # a second turn would have started by now

    assert len(api.sent_messages(ALICE.id)) == 1
    [turn] = running.turns
    assert turn["text"] == "\n\n".join(message["text"] for message in messages)
    assert turn["external_id"] == f"tg-{ALICE.id}-{messages[-1]['message_id']}"
    assert reply.params["reply_parameters"]["message_id"] == messages[-1]["message_id"]
    rows = running.stored(ALICE)
    assert [row["content"] for row in rows if row["role"] == "user"] == [
        message["text"] for message in messages
    ]
    assert [row["role"] for row in rows].count("assistant") == 1


async def test_turns_of_one_chat_run_one_at_a_time_in_order(start_bot) -> None:
    running = await start_bot(turn_wait_s=0.05)
    api = running.api
    api.send_text(ALICE, "warm up")
    await running.reply_to(ALICE, 1)
    sent = []
    for index in range(3):
        sent.append(api.send_text(ALICE, f"message {index}"))
        # The next message comes while this turn is still running.
        await api.wait_until(lambda: len(running.turns) == len(sent) + 1, what="turn started")
    replies = await running.reply_to(ALICE, 4)

    turns = running.turns[1:]
    assert [turn["text"] for turn in turns] == [f"message {i}" for i in range(3)]
    assert all(a["finished"] <= b["started"] for a, b in itertools.pairwise(turns))
    assert [reply.params["reply_parameters"]["message_id"] for reply in replies[1:]] == [
        message["message_id"] for message in sent
    ]
    user_rows = [row["content"] for row in running.stored(ALICE) if row["role"] == "user"]
    assert user_rows == ["warm up"] + [f"message {i}" for i in range(3)]


async def test_album_is_one_turn_with_every_photo(start_bot) -> None:
    running = await start_bot()
    photos = [bytes([index]) * 2000 for index in range(1, 4)]
    album = running.api.send_album(ALICE, photos, caption="Our trip to Porto")
    await running.reply_to(ALICE)

    [turn] = running.turns
    assert turn["text"].count(ENGLISH.photo) == 3
    assert "Our trip to Porto" in turn["text"]
    assert [base64.b64decode(part["base64"]) for part in turn["parts"]] == photos
    assert {part["type"] for part in turn["parts"]} == {"image"}
    stored = [row for row in running.stored(ALICE) if row["role"] == "user"]
    assert [row["external_id"] for row in stored] == [
        f"tg-{ALICE.id}-{message['message_id']}" for message in album
    ]
    assert stored[0]["content"] == f"{ENGLISH.photo} Our trip to Porto"


async def test_voice_photo_and_pdf(start_bot) -> None:
    running = await start_bot()
    api = running.api
    voice = b"OggS" + b"\x00" * 500
    photo = b"\xff\xd8\xff" + b"\x10" * 800
    pdf = small_pdf("Quarterly report: revenue grew 12 percent")

    api.send_voice(ALICE, voice, duration=4)
    await running.reply_to(ALICE, 1)
    api.send_photo(ALICE, photo, caption="look at this")
    await running.reply_to(ALICE, 2)
    api.send_document(ALICE, pdf, file_name="report.pdf", mime_type="application/pdf")
    await running.reply_to(ALICE, 3)

    voice_turn, photo_turn, pdf_turn = running.turns
    assert voice_turn["text"] == ENGLISH.voice.format(duration=4)
    assert voice_turn["parts"] == [], "a text model is never sent raw audio"
    assert photo_turn["text"] == f"{ENGLISH.photo} look at this"
    assert base64.b64decode(photo_turn["parts"][0]["base64"]) == photo
    assert photo_turn["parts"][0]["mime_type"] == "image/jpeg"
    assert "Quarterly report: revenue grew 12 percent" in pdf_turn["text"]
    assert pdf_turn["text"].startswith(ENGLISH.document.format(name="report.pdf"))
    assert pdf_turn["parts"] == []
    stored = [row["content"] for row in running.stored(ALICE) if row["role"] == "user"]
    assert stored == [
        ENGLISH.voice.format(duration=4),
        f"{ENGLISH.photo} look at this",
        ENGLISH.document.format(name="report.pdf"),
    ]


async def test_text_document_inline_and_capped(start_bot) -> None:
    running = await start_bot(max_document_chars=50)
    notes = "Shopping list: bread, milk, cheese, tomatoes, olive oil, basil, coffee.\n" * 3
    running.api.send_document(
        ALICE, notes.encode(), file_name="notes.txt", mime_type="text/plain", caption="my list"
    )
    await running.reply_to(ALICE)
    [turn] = running.turns
    assert notes[:50] in turn["text"]
    assert notes[:51] not in turn["text"]
    assert ENGLISH.truncated.format(limit=50) in turn["text"]


async def test_unsupported_and_oversized_files_get_a_clear_reply(start_bot) -> None:
    running = await start_bot(max_file_bytes=1024 * 1024)
    api = running.api
    api.send_document(
        ALICE, b"7z\xbc\xaf", file_name="archive.7z", mime_type="application/x-7z-compressed"
    )
    [first] = await running.reply_to(ALICE, 1)
    assert first.result["text"] == ENGLISH.unsupported_file.format(name="archive.7z")
    api.send_document(
        ALICE,
        b"%PDF-1.4",
        file_name="huge.pdf",
        mime_type="application/pdf",
        caption="please read",
        declared_size=5 * 1024 * 1024,
    )
    replies = await running.reply_to(ALICE, 3)
    assert replies[1].result["text"] == ENGLISH.file_too_large.format(name="huge.pdf", limit_mb=1)
    assert "please read" in running.turns[-1]["text"], "the caption still gets an answer"
    assert not any(call.params.get("file_id") for call in api.calls_of("getFile"))


async def test_downloads_are_retried_with_backoff(start_bot) -> None:
    running = await start_bot()
    api = running.api
    api.fail_next("download", status=502, times=2)
    api.fail_next("getFile", status=500)
    api.send_photo(ALICE, b"\xff\xd8\xff" + b"\x01" * 100)
    await running.reply_to(ALICE)
    assert len(api.calls_of("getFile", ok_only=False)) == 2
    [turn] = running.turns
    assert len(turn["parts"]) == 1


async def test_flood_control_is_waited_out(start_bot) -> None:
    running = await start_bot()
    running.api.rate_limit_next("sendMessage", retry_after=1)
    started = time.monotonic()
    running.api.send_text(ALICE, "hello")
    [reply] = await running.reply_to(ALICE)
    assert reply.at - started >= 1.0
    assert len(running.api.calls_of("sendMessage", ok_only=False)) == 2


async def test_long_answer_is_split_under_the_limit(start_bot) -> None:
    paragraph = "**Lisbon** tip: take tram 28 early — before 9 am it's quiet. 🚋 " * 12
    long_answer = "\n\n".join(f"{index}. {paragraph}" for index in range(20))
    model = ToolFreeModel(messages=iter([AIMessage(content=long_answer)] * 5))
    running = await start_bot(models={"responder": model})
    running.api.send_text(ALICE, "Give me every tip you have about Lisbon.")
    await running.api.wait_until(lambda: running.turns and "result" in running.turns[0])
    rendered = markdown_to_html(running.turns[0]["result"]["answer"])
    expected_parts = len(split_message(rendered, html=True))
    assert expected_parts > 1
    parts = await running.reply_to(ALICE, expected_parts)
    assert len(parts) == expected_parts
    assert all(utf16_length(call.result["text"]) <= 4096 for call in parts)
    assert all(utf16_length(call.params["text"]) <= 4096 for call in parts)
    assert "reply_parameters" in parts[0].params
    assert all("reply_parameters" not in call.params for call in parts[1:])
    shown = "".join(call.result["text"] for call in parts)
    expected = html_to_plain(rendered)
    assert shown.replace("\n", "").replace(" ", "") == expected.replace("\n", "").replace(" ", "")


async def test_html_rejected_is_resent_as_plain_text(start_bot) -> None:
    model = ToolFreeModel(messages=iter([AIMessage(content="**Bold** and `code` <tag> & more")]))
    running = await start_bot(models={"responder": model})
    running.api.reject_html = True
    sent = running.api.send_text(ALICE, "format something")
    [reply] = await running.reply_to(ALICE)

    refused = running.api.calls_of("sendMessage", ok_only=False)[0]
    assert refused.status == 400 and refused.params["parse_mode"] == "HTML"
    assert "parse_mode" not in reply.params
    assert reply.result["text"] == "Bold and code <tag> & more"
    assert reply.params["reply_parameters"]["message_id"] == sent["message_id"]


async def test_user_not_on_the_allowlist_gets_nothing(start_bot) -> None:
    running = await start_bot()
    api = running.api
    api.send_text(MALLORY, "hello?")
    api.send_text(MALLORY, "/start")
    api.send_photo(MALLORY, b"\xff\xd8\xff")
    api.send_text(ALICE, "hi")
    await running.reply_to(ALICE)
    await asyncio.sleep(0.4)

    assert api.sent_messages(MALLORY.id) == []
    assert not [call for call in api.calls if call.params.get("chat_id") == str(MALLORY.id)]
    assert running.deps.store.messages.count(MALLORY.id) == 0
    assert api.calls_of("getFile") == []


async def test_nobody_is_allowed_when_the_list_is_empty(start_bot) -> None:
    running = await start_bot(allowed_user_ids="")
    running.api.send_text(ALICE, "hi")
    await running.api.wait_until(lambda: running.api.pending_updates() == 0, what="consumed")
    await asyncio.sleep(0.5)
    assert running.api.sent_messages() == []
    assert running.deps.store.messages.count(ALICE.id) == 0


async def test_a_redelivered_message_is_not_answered_twice(start_bot) -> None:
    running = await start_bot()
    message = running.api.send_text(ALICE, "only once please")
    await running.reply_to(ALICE)
    running.api._enqueue("message", message)
    await running.api.wait_until(lambda: running.api.pending_updates() == 0, what="consumed")
    await asyncio.sleep(0.6)
    assert len(running.api.sent_messages(ALICE.id)) == 1
    assert len(running.turns) == 1


# -- commands -------------------------------------------------------------------------


async def test_start_and_help_follow_the_users_language(start_bot) -> None:
    running = await start_bot()
    running.api.send_text(ALICE, "/start")
    running.api.send_text(BORIS, "/help")
    [english] = await running.reply_to(ALICE)
    [russian] = await running.reply_to(BORIS)
    assert english.result["text"] == html_to_plain(ENGLISH.start)
    # Nothing here transcribes voice or describes photos: /help says so.
    unread = RUSSIAN.help_voice_unread + RUSSIAN.help_photos_unread
    assert russian.result["text"] == html_to_plain(RUSSIAN.help + unread)
    assert running.deps.store.messages.count(ALICE.id) == 0, "commands are not conversation"
    commands = running.api.calls_of("setMyCommands")
    assert {call.params.get("language_code") for call in commands} == {None, "ru"}


async def test_new_starts_a_segment(start_bot) -> None:
    running = await start_bot()
    running.api.send_text(ALICE, "first conversation")
    await running.reply_to(ALICE, 1)
    running.api.send_text(ALICE, "/new")
    replies = await running.reply_to(ALICE, 2)
    assert replies[1].result["text"] == ENGLISH.new_segment
    running.api.send_text(ALICE, "second conversation")
    await running.reply_to(ALICE, 3)
    segments = {row["content"]: row["segment"] for row in running.stored(ALICE)}
    assert segments["first conversation"] == 0
    assert segments["second conversation"] == 1


async def test_memory_lists_facts_people_and_topics(start_bot) -> None:
    running = await start_bot()
    running.api.send_text(BORIS, "/memory")
    [empty] = await running.reply_to(BORIS, 1)
    assert empty.result["text"] == RUSSIAN.memory_empty

    store = running.deps.store
    store.facts.add(BORIS.id, "Живёт в Казани <центр>", "identity", 95)
    store.people.add(BORIS.id, "Ольга", circle="family", bio="сестра")
    store.facts.add(ALICE.id, "Alice's secret", "identity", 90)
    running.api.send_text(BORIS, "/memory")
    replies = await running.reply_to(BORIS, 2)
    text = replies[1].result["text"]
    assert "Живёт в Казани <центр>" in text
    assert "Ольга (family): сестра" in text
    assert "Alice" not in text


async def test_forget_a_fact_with_confirmation(start_bot) -> None:
    running = await start_bot()
    deps = running.deps
    fact = deps.store.facts.add(ALICE.id, "Allergic to peanuts", "identity", 90)
    vector = deps.embedder.encode([fact["content"]])
    deps.vectors.upsert("facts", ALICE.id, [fact["id"]], vector)
    kept = deps.store.facts.add(ALICE.id, "Likes jazz", "context", 40)

    running.api.send_text(ALICE, "/forget")
    [menu] = await running.reply_to(ALICE)
    assert menu.result["text"] == ENGLISH.forget_choose
    buttons = [row[0] for row in menu.params["reply_markup"]["inline_keyboard"]]
    [peanuts] = [button for button in buttons if "peanuts" in button["text"]]

    running.api.press_button(ALICE, menu.result, peanuts["callback_data"])
    await running.api.wait_until(lambda: running.api.calls_of("editMessageText"))
    confirm = running.api.calls_of("editMessageText")[0]
    assert "Allergic to peanuts" in confirm.result["text"]
    yes, no = confirm.params["reply_markup"]["inline_keyboard"][0]
    assert (yes["text"], no["text"]) == (ENGLISH.forget_yes, ENGLISH.forget_no)
    assert deps.store.facts.all_of(ALICE.id), "nothing is deleted before the confirmation"

    running.api.press_button(ALICE, menu.result, yes["callback_data"])
    await running.api.wait_until(lambda: len(running.api.calls_of("editMessageText")) == 2)
    done = running.api.calls_of("editMessageText")[1]
    assert done.result["text"] == "Forgotten: Allergic to peanuts"
    assert [f["id"] for f in deps.store.facts.all_of(ALICE.id)] == [kept["id"]]
    assert deps.vectors.vectors("facts", ALICE.id, [fact["id"], kept["id"]]).keys() == {kept["id"]}
    assert [h["action"] for h in deps.store.facts.history(ALICE.id)][-1] == "delete"
    assert len(running.api.calls_of("answerCallbackQuery")) == 2


async def test_forget_cannot_reach_another_users_memory(start_bot) -> None:
    running = await start_bot()
    theirs = running.deps.store.facts.add(BORIS.id, "Борис любит шахматы", "context", 50)
    mine = running.deps.store.facts.add(ALICE.id, "Likes tea", "context", 50)
    running.api.send_text(ALICE, "/forget")
    [menu] = await running.reply_to(ALICE)
    forged = (
        menu.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .replace(f":{mine['id']}", f":{theirs['id']}")
        .replace(":ask:", ":yes:")
    )
    running.api.press_button(ALICE, menu.result, forged)
    await running.api.wait_until(lambda: running.api.calls_of("editMessageText"))
    assert running.api.calls_of("editMessageText")[0].result["text"] == ENGLISH.forget_gone
    assert running.deps.store.facts.all_of(BORIS.id)


async def test_export_sends_the_users_memory_as_json(start_bot) -> None:
    running = await start_bot()
    running.api.send_text(ALICE, "Remember that my flight is on Friday.")
    await running.reply_to(ALICE)
    running.deps.store.facts.add(ALICE.id, "Flies on Friday", "status", 60)
    running.api.send_text(ALICE, "/export")
    await running.api.wait_until(lambda: running.api.calls_of("sendDocument"))
    [document] = running.api.calls_of("sendDocument")
    name, payload = document.files["document"]
    exported = json.loads(payload)
    assert name.endswith(".json")
    assert exported["user_id"] == ALICE.id
    assert exported["messages"][0]["content"] == ("Remember that my flight is on Friday.")
    assert [fact["content"] for fact in exported["facts"]] == ["Flies on Friday"]
    assert document.params["caption"] == ENGLISH.export_caption


async def test_stats(start_bot) -> None:
    running = await start_bot()
    running.api.send_text(ALICE, "hello there")
    await running.reply_to(ALICE)
    running.api.send_text(ALICE, "/stats")
    replies = await running.reply_to(ALICE, 2)
    assert replies[1].result["text"] == html_to_plain(
        ENGLISH.stats.format(messages=2, unarchived=1, topics=0, facts=0, people=0, segment=1)
    )
    # The reply, written from memory alone (no model here), is kept in the log but is not
    # memory: only the question waits to be archived (issue 14).
    assert [row["kind"] for row in running.stored(ALICE)] == ["conversation", "memory_only_answer"]


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
