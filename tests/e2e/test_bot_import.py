"""A chat export sent to the bot becomes memory: document → what was found → Import →
progress → result; oversized files are sent to the command line, and one user's button
or import never reaches another's memory."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable

import pytest

from bot.import_texts import ENGLISH_IMPORT, RUSSIAN_IMPORT
from bot.texts import ENGLISH
from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeUser
from tests.support.bot_harness import RunningBot, running_bot
from tests.support.exports import chatgpt_conversations, full_export

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")


async def send_export(running: RunningBot, user: FakeUser, data: bytes, name: str) -> ApiCall:
    before = len(running.api.sent_messages(user.id))
    running.api.send_document(user, data, file_name=name, mime_type="application/json")
    return (await running.api.wait_for_sent(user.id, before + 1, within_s=40))[-1]


def button_data(call: ApiCall) -> str:
    [[button]] = call.params["reply_markup"]["inline_keyboard"]
    return button["callback_data"]


async def press_and_finish(running: RunningBot, user: FakeUser, offer: ApiCall) -> list[str]:
    api = running.api
    api.press_button(user, offer.result, button_data(offer))
    done = ENGLISH_IMPORT.done.split(":")[0] if user is ALICE else "Готово"

    def edits() -> list[str]:
        return [
            call.params["text"]
            for call in api.calls_of("editMessageText")
            if int(call.params["chat_id"]) == user.id
        ]

    await api.wait_until(lambda: any(e.startswith(done) for e in edits()), within_s=90,
                         what="the import's result")  # fmt: skip
    return edits()


def external_ids(deps: Deps, user: FakeUser) -> set[str]:
    return {row["external_id"] for row in deps.store.messages.all_of(user.id)}


async def test_an_export_is_offered_imported_with_progress_and_kept_apart(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE, BORIS]) as running:
        offer = await send_export(running, ALICE, json.dumps(full_export()).encode(), "result.json")
        assert offer.params["text"].startswith("This is a Telegram export: 2 chats, 9 messages")
        stolen = running.api.press_button(BORIS, offer.result, button_data(offer))
        assert stolen
        await running.api.wait_until(
            lambda: any(
                c.params.get("text") == RUSSIAN_IMPORT.expired
                for c in running.api.calls_of("answerCallbackQuery")
            ),
            what="the stranger's press refused",
        )
        edits = await press_and_finish(running, ALICE, offer)
        assert edits[0] == ENGLISH_IMPORT.started.format(messages=9)
        assert edits[-1].startswith("Imported: 9 new messages of 9")
        assert {"tg:2002:2", "tg:4004:2"} <= external_ids(running.deps, ALICE)
        assert not any(i.startswith("tg:") for i in external_ids(running.deps, BORIS))

        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
            zipped.writestr("export/conversations.json", json.dumps(chatgpt_conversations()))
        offer = await send_export(running, BORIS, archive.getvalue(), "chatgpt.zip")
        assert offer.params["text"].startswith("Это экспорт ChatGPT: чатов 2, сообщений 5")
        edits = await press_and_finish(running, BORIS, offer)
        assert edits[-1].startswith("Готово: новых сообщений 5 из 5")
        assert not any(i.startswith("chatgpt:") for i in external_ids(running.deps, ALICE))
        alice_people = {p["name"] for p in running.deps.store.people.all_of(ALICE.id)}
        assert "Олег" in alice_people
        assert not running.deps.store.people.all_of(BORIS.id)
        for user, shown, hidden in [(BORIS, "↳ Sourdough", "Олег"), (ALICE, "↳ Олег", "Sourdough")]:
            before = len(running.api.sent_messages(user.id))
            running.api.send_text(user, "/memory")
            reply = (await running.api.wait_for_sent(user.id, before + 1))[-1].params["text"]
            assert shown in reply and hidden not in reply, reply


async def test_a_file_over_the_download_limit_is_sent_to_the_command_line(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [ALICE]) as running:
        before = len(running.api.sent_messages(ALICE.id))
        running.api.send_document(
            ALICE, b"{}", file_name="result.json", mime_type="application/json",
            declared_size=25 * 1024 * 1024,
        )  # fmt: skip
        [reply] = (await running.api.wait_for_sent(ALICE.id, before + 1))[before:]
        assert reply.params["text"] == ENGLISH_IMPORT.too_big.format(
            name="result.json", user_id=ALICE.id
        )
        assert not running.api.calls_of("getFile")
        offer = await send_export(running, ALICE, b'{"name": "x", "messages": [', "result.json")
        assert offer.params["text"].startswith("I can't import result.json: not a complete JSON")
        other = io.BytesIO()
        with zipfile.ZipFile(other, "w") as zipped:
            zipped.writestr("photos/cat.jpg", b"\xff\xd8")
        reply = await send_export(running, ALICE, other.getvalue(), "photos.zip")
        assert reply.params["text"] == ENGLISH.unsupported_file.format(name="photos.zip")
