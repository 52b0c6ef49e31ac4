"""Reminder offers through the bot on loopback: what the user promised in chat, found by
the Archivist on the scripted OpenAI-compatible server, is offered once in the user's
private chat; the user's press schedules it and confirms the time, an offer nobody
presses schedules nothing, "No thanks" schedules nothing, and a stranger's press on
another user's offer changes nothing."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from app.memory import archive_user
from bot.render import html_to_plain
from bot.task_texts import ENGLISH_TASKS, RUSSIAN_TASKS
from core.deps import Deps
from core.records import parse_timestamp
from tests.support.bot_api_server import ApiCall, FakeUser
from tests.support.bot_harness import RunningBot, buttons, running_bot
from tests.support.openai_server import ScriptedOpenAI, reply, respond

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
FAST = {"task_poll_s": 0.2, "turn_wait_s": 0.1}
SAID = {
    "I'll send Ivan the report tomorrow at 18:00.": ("send Ivan the report", "tomorrow at 18:00"),
    "And I'll call the bank tomorrow at 11:00.": ("call the bank", "tomorrow at 11:00"),
    "Maybe I'll paint the fence tomorrow at 15:00.": ("paint the fence", "tomorrow at 15:00"),
}


def archivist(request: dict[str, Any]) -> Any:
    """The Archivist's reply: each promise of `SAID` found in the prompt, by its line id."""
    prompt = request["messages"][-1]["content"]
    commitments = []
    for words, (text, when) in SAID.items():
        found = re.search(r"\[id=(\d+)\] \[[^\]]*\]: " + re.escape(words), prompt)
        if found:
            commitments.append({"text": text, "when": when, "message_id": int(found.group(1))})
    return reply(json.dumps({"facts": [], "people": [], "commitments": commitments}))


async def press(running: RunningBot, user: FakeUser, offer: ApiCall, index: int) -> str:
    """`user` presses the offer's button `index` (0: remind, 1: no thanks); the answer."""
    api = running.api
    before = len(api.calls_of("answerCallbackQuery"))
    api.press_button(user, offer.result, buttons(offer)[index]["callback_data"])
    await api.wait_until(lambda: len(api.calls_of("answerCallbackQuery")) > before, what="answer")
    return api.calls_of("answerCallbackQuery")[-1].params.get("text", "")


async def test_an_offer_is_sent_once_and_only_its_users_press_schedules_it(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    server.script(*[respond(archivist)] * 5)
    models = {"archivist": server.chat_model()}
    async with running_bot(make_deps, [ALICE, BORIS], models=models, **FAST) as running:
        api, store = running.api, running.deps.store
        for count, words in enumerate(SAID, start=1):
            api.send_text(ALICE, words)
            await api.wait_for_sent(ALICE.id, count)
        answers = len(api.sent_messages(ALICE.id))

        await archive_user(running.deps, ALICE.id, archive_all=True)

        offers = (await api.wait_for_sent(ALICE.id, answers + 3))[answers:]
        await asyncio.sleep(1.0)  # several scheduler passes: each offer is sent once
        assert len(api.sent_messages(ALICE.id)) == answers + 3
        assert api.sent_messages(BORIS.id) == []
        by_request = {offer["request"]: offer for offer in store.offers.of_user(ALICE.id)}
        assert set(by_request) == {text for text, _ in SAID.values()}
        report, _, fence = offers
        for message, (said, (text, _)) in zip(offers, SAID.items(), strict=True):
            shown = html_to_plain(message.params["text"])
            assert said in shown and text in shown
            when = parse_timestamp(by_request[text]["due_at"]).strftime("%Y-%m-%d %H:%M UTC")
            assert [button["text"] for button in buttons(message)] == [
                f"⏰ Remind me {when}",
                "No thanks",
            ]
        assert store.tasks.of_user(ALICE.id) == [], "nothing is scheduled before a press"

        assert await press(running, BORIS, report, 0) == RUSSIAN_TASKS.offer_gone
        assert await press(running, BORIS, fence, 1) == RUSSIAN_TASKS.offer_gone
        assert store.tasks.of_user(BORIS.id) == [] and store.tasks.of_user(ALICE.id) == []
        assert {offer["state"] for offer in store.offers.of_user(ALICE.id)} == {"offered"}

        assert await press(running, ALICE, report, 0) == ""
        [task] = store.tasks.of_user(ALICE.id)
        assert (task["request"], task["next_run_at"]) == (
            "send Ivan the report",
            by_request["send Ivan the report"]["due_at"],
        )
        confirmed = html_to_plain(api.calls_of("editMessageText")[-1].params["text"])
        due = parse_timestamp(task["next_run_at"]).strftime("%Y-%m-%d %H:%M UTC")
        assert confirmed == f"⏰ I'll remind you on {due}: send Ivan the report"
        assert await press(running, ALICE, report, 0) == ENGLISH_TASKS.offer_gone

        assert await press(running, ALICE, fence, 1) == ""
        assert "paint the fence" in html_to_plain(
            api.calls_of("editMessageText")[-1].params["text"]
        )
        states = {offer["request"]: offer["state"] for offer in store.offers.of_user(ALICE.id)}
        assert states == {
            "send Ivan the report": "accepted",
            "call the bank": "offered",
            "paint the fence": "dismissed",
        }
        assert [task["request"] for task in store.tasks.of_user(ALICE.id)] == [
            "send Ivan the report"
        ], "the offer nobody pressed and the dismissed one schedule nothing"
