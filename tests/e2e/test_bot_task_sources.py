"""A work task's run through the bot on loopback carries the Sources button of its stored
answer, like an answer: the Tasker (on the scripted OpenAI-compatible server) searches the
user's memory, the message arrives with the button, pressing it shows what the run was
made from; a plain reminder has no button; a stranger's press on it shows nothing."""

from __future__ import annotations

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
