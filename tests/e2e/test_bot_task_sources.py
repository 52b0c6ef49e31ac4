"""A work task's run through the bot on loopback, like an answer: the Tasker (on the
scripted OpenAI-compatible server) searches the user's memory, its message grows in
drafts while it is written and then arrives once with the Sources button of its stored
answer; pressing it shows what the run was made from; a plain reminder has no button; a
stranger's press on it shows nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.render import html_to_plain
from bot.routers.sources import SourcesAction
from bot.texts import ENGLISH, RUSSIAN
from core.deps import Deps
from core.records import parse_timestamp
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import buttons, command, running_bot
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
FAST = {"task_poll_s": 0.2, "turn_wait_s": 0.1}
ANSWER = "You booked the dentist, Dr Somov, for December 4."
LONG_ANSWER = (
    "You booked the dentist, Dr Somov, for December 4 at ten in the morning; "
    "bring the insurance card and arrive a little early to fill in the forms."
)


def remember_dentist(deps: Deps, user_id: int) -> str:
    """One archived topic of the user's about a dentist appointment; its summary."""
    rows = deps.store.messages.add(
        user_id, new_messages(["Booked the dentist Dr Somov for Dec 4", "Noted"], prefix="d-")
    )
    summary = "Dentist Dr Somov, appointment on December 4"
    deps.store.topics.save(user_id, [(summary, [row["id"] for row in rows])])
    deps.indexer.index_all(user_id)
    return summary


async def test_a_work_run_carries_its_sources_button(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    server.script(tool_call("search_history", {"query": "dentist appointment"}), reply(ANSWER))
    models = {"tasker": server.chat_model()}
    async with running_bot(make_deps, [ALICE, BORIS], models=models, **FAST) as running:
        api, deps = running.api, running.deps
        summary = remember_dentist(deps, ALICE.id)
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, ALICE, "/remind in 1 hour check what I said about the dentist")
        await command(running, ALICE, "/remind in 1 hour stretch")
        due = max(
            parse_timestamp(task["next_run_at"]) for task in deps.store.tasks.of_user(ALICE.id)
        )
        now[0] = due + timedelta(seconds=1)

        sent = (await api.wait_for_sent(ALICE.id, 4, within_s=30))[2:]

        by_text = {html_to_plain(call.params["text"]): call for call in sent}
        assert set(by_text) == {f"⏰ {ANSWER}", "⏰ stretch"}
        assert buttons(by_text["⏰ stretch"]) == [], "a plain reminder has no sources"
        work = by_text[f"⏰ {ANSWER}"]
        [button] = buttons(work)
        assert button["text"] == ENGLISH.sources_button
        [stored] = [
            row
            for row in deps.store.messages.all_of(ALICE.id)
            if row["kind"] == "task" and row["content"] == ANSWER
        ]
        assert SourcesAction.unpack(button["callback_data"]).answer_id == stored["id"]

        api.press_button(ALICE, work.result, button["callback_data"])
        shown = (await api.wait_for_sent(ALICE.id, 5))[-1]
        assert summary in html_to_plain(shown.params["text"])

        forged = {**work.result, "chat": BORIS.chat()}
        api.press_button(BORIS, forged, button["callback_data"])
        await api.wait_until(
            lambda: any(
                call.params.get("text") == RUSSIAN.sources_gone
                for call in api.calls_of("answerCallbackQuery")
            ),
            what="the stranger's press refused",
        )
        assert api.sent_messages(BORIS.id) == []


async def test_a_work_run_grows_in_drafts_then_comes_once(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    server.script(reply(LONG_ANSWER, pace_s=0.05))
    models = {"tasker": server.chat_model()}
    settings = {**FAST, "draft_interval_s": 0.2}
    async with running_bot(make_deps, [ALICE], models=models, **settings) as running:
        api, deps = running.api, running.deps
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, ALICE, "/remind in 1 hour summarise my week")
        [task] = deps.store.tasks.of_user(ALICE.id)
        now[0] = parse_timestamp(task["next_run_at"]) + timedelta(seconds=1)

        final = (await api.wait_for_sent(ALICE.id, 2, within_s=30))[-1]
        await asyncio.sleep(0.5)

        drafts = api.drafts(ALICE.id)
        assert len(drafts) >= 2, "the message grew in drafts while the Tasker wrote it"
        shown = [html_to_plain(call.params["text"]) for call in drafts]
        assert all(LONG_ANSWER.startswith(text) for text in shown)
        assert [len(text) for text in shown] == sorted({len(text) for text in shown})
        assert len({call.params["draft_id"] for call in drafts}) == 1
        assert {call.params["can_stop"] for call in drafts} == {"false"}, "nobody to stop it"
        assert final.at > drafts[-1].at, "no draft after the message"
        assert html_to_plain(final.params["text"]) == f"⏰ {LONG_ANSWER}"
        assert len(api.sent_messages(ALICE.id)) == 2, "the message comes once"
        [button] = buttons(final)
        assert button["text"] == ENGLISH.sources_button
