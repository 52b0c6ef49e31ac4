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
import statistics
import time

import pytest
from langchain_core.messages import AIMessage

from bot.render import html_to_plain, markdown_to_html
from bot.splitting import split_message
from bot.texts import ENGLISH
from stores.checkpoints import durable_checkpointer
from tests.support.bot_api_server import utf16_length
from tests.support.bot_harness import round_trips
from tests.support.hostile_files import small_pdf
from tests.support.running_bot import ALICE, ToolFreeModel, report

pytestmark = pytest.mark.timeout(90)


# -- conversation ----------------------------------------------------------------------


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
