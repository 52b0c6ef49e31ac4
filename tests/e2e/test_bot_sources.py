"""The Sources button and `/why` end to end: what an answer was made from, in the user's
language, only in the user's private chat, and only ever the user's own memory.

aiogram talks HTTP to the fake Bot API server on 127.0.0.1; both users' conversations
are archived by the real memory graph; no chat model, so answers are memory-only and
their sources are the recalled topics in search order, with the fallback said.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio

from bot.render import html_to_plain
from bot.routers.sources import SourcesAction
from bot.texts import ENGLISH, RUSSIAN
from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeUser, group_chat
from tests.support.bot_harness import RunningBot, running_bot
from tests.support.worlds import OTHER_USER, USER, build_response_world

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(USER, "Alice", "en")
ALICE_RU = FakeUser(USER, "Алиса", "ru")
BORIS = FakeUser(OTHER_USER, "Борис", "ru")
QUESTION = "How long did the Postgres restore take on staging?"


@pytest_asyncio.fixture
async def running(make_deps: Callable[..., Deps]) -> AsyncIterator[RunningBot]:
    """The bot over both users' archived conversations and a core fact each."""
    async with running_bot(make_deps, [ALICE, BORIS], turn_wait_s=0.1) as bot:
        await build_response_world(bot.deps)
        yield bot


def sources_button(call: ApiCall) -> str:
    [[button]] = call.params["reply_markup"]["inline_keyboard"]
    return button["callback_data"]


async def answered(running: RunningBot, user: FakeUser, text: str) -> ApiCall:
    already = len(running.api.sent_messages(user.id))
    running.api.send_text(user, text)
    replies = await running.api.wait_for_sent(user.id, already + 1, within_s=60)
    return replies[-1]


async def test_the_sources_button_shows_dates_summaries_and_reasons(running: RunningBot):
    answer = await answered(running, ALICE, QUESTION)
    data = sources_button(answer)
    topics = {t["id"]: t for t in running.deps.store.topics.all_of(USER)}

    running.api.press_button(ALICE, answer.result, data)
    shown = (await running.api.wait_for_sent(ALICE.id, 2))[-1]

    assert shown.params["reply_parameters"]["message_id"] == answer.result["message_id"]
    text = shown.result["text"]
    assert text.startswith(html_to_plain(ENGLISH.sources_title))
    picked = SourcesAction.unpack(data).answer_id
    sources = running.deps.store.answers.get(USER, picked)["context_used"]
    assert sources["topics"], "the answer recalled topics"
    for used in sources["topics"]:
        topic = topics[used["id"]]
        assert topic["first_message_at"][:10] in text
        assert " ".join(topic["summary"].split())[:60] in text
    assert "why: vector order (no_model)" in text
    assert "without the reranker (no_model)" in text
    assert "Lives in Berlin with Ira (always in view)" in text
    assert all(
        topic["summary"][:40] not in text for topic in running.deps.store.topics.all_of(OTHER_USER)
    )
    [callback_answer] = running.api.calls_of("answerCallbackQuery")
    assert "show_alert" not in callback_answer.params


async def test_why_shows_the_sources_of_the_last_answer(running: RunningBot):
    answer = await answered(running, ALICE, QUESTION)
    running.api.press_button(ALICE, answer.result, sources_button(answer))
    by_button = (await running.api.wait_for_sent(ALICE.id, 2))[-1]

    by_command = await answered(running, ALICE, "/why")

    assert by_command.result["text"] == by_button.result["text"]
    assert running.deps.store.messages.by_external_id(USER, "/why") is None


async def test_sources_follow_the_users_language(running: RunningBot):
    answer = await answered(running, ALICE_RU, "Сколько занял restore Postgres на staging?")
    [[button]] = answer.params["reply_markup"]["inline_keyboard"]
    assert button["text"] == RUSSIAN.sources_button == "Источники"

    shown = await answered(running, ALICE_RU, "/why")

    assert shown.result["text"].startswith(html_to_plain(RUSSIAN.sources_title))
    assert "почему: vector order (no_model)" in shown.result["text"]
    assert "без реранкера" in shown.result["text"]


async def test_never_in_a_group(running: RunningBot):
    api = running.api
    answer = await answered(running, ALICE, QUESTION)
    group = group_chat()
    in_group = {**answer.result, "chat": group}
    sent_before = len(api.sent_messages())

    api.press_button(ALICE, in_group, sources_button(answer))
    await api.wait_until(lambda: api.calls_of("answerCallbackQuery"), what="the button answered")
    api.send_text(ALICE, "/why", chat=group)
    [refusal] = await api.wait_for_sent(group["id"], 1)

    [alert] = api.calls_of("answerCallbackQuery")
    assert alert.params["text"] == ENGLISH.private_only
    assert alert.params["show_alert"] in (True, "true")
    assert refusal.result["text"] == ENGLISH.group_refusal
    assert len(api.sent_messages()) == sent_before + 1, "nothing but the refusal was sent"
    assert api.calls_of("sendMessageDraft") == []


async def test_a_button_naming_another_users_answer_shows_nothing(running: RunningBot):
    api = running.api
    borises = await answered(running, BORIS, "Сколько занял restore?")
    sent_to_alice = len(api.sent_messages(ALICE.id))

    forged = {**borises.result, "chat": ALICE.chat()}
    api.press_button(ALICE, forged, sources_button(borises))
    await api.wait_until(lambda: api.calls_of("answerCallbackQuery"), what="the button answered")

    [alert] = api.calls_of("answerCallbackQuery")
    assert alert.params["text"] == ENGLISH.sources_gone
    assert len(api.sent_messages(ALICE.id)) == sent_to_alice


async def test_why_before_any_answer_says_so(make_deps: Callable[..., Deps]):
    async with running_bot(make_deps, [ALICE]) as running:
        reply = await answered(running, ALICE, "/why")
    assert reply.result["text"] == ENGLISH.sources_no_answer
