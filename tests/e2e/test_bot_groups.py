"""Group chats end to end: an allowed user's memory never reaches a group.

aiogram talks HTTP to the fake Bot API server on 127.0.0.1; Alice's memory (a fact,
messages and the topic archived from them) holds her wifi password. In a supergroup,
every command, question and button of hers is refused in her language with "talk to me
privately", nothing of the group is stored, and the password appears in no message,
alert or document the bot sends there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from app.memory import archive_user
from bot.routers.callbacks import ForgetAction
from bot.routers.sources import SourcesAction
from bot.texts import ENGLISH, RUSSIAN
from core.deps import Deps
from tests.support.bot_api_server import FakeBotAPI, FakeUser, group_chat
from tests.support.bot_harness import running_bot
from tests.support.messages import new_messages

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
PASSWORD = "zebra-hunter-4417"
WIFI_TALK = [
    ("user", f"Note for later: the home wifi password is {PASSWORD}."),
    ("assistant", f"Got it: the home wifi password is {PASSWORD}."),
    ("user", "And the router sits behind the bookshelf in the hall."),
    ("assistant", "Noted, the router is behind the bookshelf."),
]
COMMANDS = ["/memory", "/export", "/stats", "/forget", "/why", "/new", "/start", "/help"]


def everything_sent_to(api: FakeBotAPI, chat_id: int) -> list[str]:
    """Every text, caption, alert and document the bot sent into a chat."""
    sent = []
    for call in api.calls:
        if str(call.params.get("chat_id")) == str(chat_id):
            sent.append(json.dumps(call.params, ensure_ascii=False))
            sent.extend(payload.decode("utf-8", "replace") for _, payload in call.files.values())
    return sent


def alerts(api: FakeBotAPI) -> list[dict[str, Any]]:
    return [call.params for call in api.calls_of("answerCallbackQuery")]


async def remember_the_password(deps: Deps) -> dict[str, Any]:
    deps.indexer.store_messages(ALICE.id, new_messages(WIFI_TALK, prefix="wifi"))
    await archive_user(deps, ALICE.id, archive_all=True)
    return deps.store.facts.add(ALICE.id, f"Home wifi password: {PASSWORD}", "identity", 95)


async def test_nothing_private_is_shown_in_a_group(make_deps: Callable[..., Deps]):
    group = group_chat()
    async with running_bot(make_deps, [ALICE, BORIS], turn_wait_s=0.1) as running:
        api, deps = running.api, running.deps
        fact = await remember_the_password(deps)
        stored_before = deps.store.messages.count(ALICE.id)
        segment_before = deps.store.sessions.current_segment(ALICE.id)

        for command in COMMANDS:
            api.send_text(ALICE, command, chat=group)
        api.send_text(ALICE, "@topica_test_bot what is my wifi password?", chat=group)
        bot_message = api._bot_message(group["id"], text="an earlier answer")
        api._enqueue(
            "message",
            api._message(ALICE, group, text="and the router?", reply_to_message=bot_message),
        )
        api.send_text(ALICE, "what's the wifi password again?", chat=group)
        api.send_text(BORIS, "/memory", chat=group)
        expected = len(COMMANDS) + 2 + 1
        replies = await api.wait_for_sent(group["id"], expected, within_s=60)

        # Buttons of Alice's private menus, pressed on a message shown in the group.
        in_group = {**bot_message, "chat": group}
        for data in (
            ForgetAction(step="yes", kind="fact", item_id=fact["id"]).pack(),
            ForgetAction(step="ask", kind="fact", item_id=fact["id"]).pack(),
            SourcesAction(answer_id=1).pack(),
        ):
            api.press_button(ALICE, in_group, data)
        await api.wait_until(lambda: len(alerts(api)) == 3, what="the buttons answered")
        await api.wait_until(lambda: api.pending_updates() == 0, what="all consumed")
        await asyncio.sleep(0.5)

        texts = [reply.result["text"] for reply in replies]
        assert texts == [ENGLISH.group_refusal] * (expected - 1) + [RUSSIAN.group_refusal]
        assert len(api.sent_messages(group["id"])) == expected, "one reply each, nothing more"
        assert all(alert["text"] == ENGLISH.private_only for alert in alerts(api))
        assert api.calls_of("sendDocument") == []
        assert api.calls_of("editMessageText") == []
        assert api.calls_of("sendMessageDraft") == []
        assert running.turns == [], "no turn ran for a group message"
        leaked = [text for text in everything_sent_to(api, group["id"]) if PASSWORD in text]
        assert leaked == []
        assert not any(PASSWORD in json.dumps(alert) for alert in alerts(api))
        assert [f["id"] for f in deps.store.facts.all_of(ALICE.id)] == [fact["id"]]
        assert deps.store.messages.count(ALICE.id) == stored_before, "nothing of the group stored"
        assert deps.store.messages.count(BORIS.id) == 0
        assert deps.store.sessions.current_segment(ALICE.id) == segment_before

        # The same user in her private chat still gets her memory.
        api.send_text(ALICE, "/memory")
        [private] = await api.wait_for_sent(ALICE.id, 1)
        assert PASSWORD in private.result["text"]


async def test_group_memory_stores_but_never_answers(make_deps: Callable[..., Deps]):
    group = group_chat()
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1, group_memory=True) as running:
        api, deps = running.api, running.deps
        said = api.send_text(ALICE, "Dinner on Saturday at 7 at our place.", chat=group)
        api.send_text(ALICE, "@topica_test_bot when is dinner?", chat=group)
        [refusal] = await api.wait_for_sent(group["id"], 1)
        await api.wait_until(lambda: api.pending_updates() == 0, what="all consumed")
        await asyncio.sleep(0.4)

        assert refusal.result["text"] == ENGLISH.group_refusal
        assert len(api.sent_messages(group["id"])) == 1
        assert running.turns == []
        stored = deps.store.messages.all_of(ALICE.id)
        assert (stored[0]["external_id"], stored[0]["role"]) == (
            f"tg-{group['id']}-{said['message_id']}",
            "user",
        )
        assert [m["content"] for m in stored] == [
            "Dinner on Saturday at 7 at our place.",
            "@topica_test_bot when is dinner?",
        ]

        api.edit_text(said, "Dinner on Saturday at 8 at our place.")
        await api.wait_until(
            lambda: deps.store.messages.edits(ALICE.id), what="the group edit kept"
        )
        [edit] = deps.store.messages.edits(ALICE.id)
        assert edit["new_content"] == "Dinner on Saturday at 8 at our place."
        assert deps.store.messages.all_of(ALICE.id)[0]["content"] == edit["new_content"]
        assert len(api.sent_messages(group["id"])) == 1, "an edit gets no reply"
