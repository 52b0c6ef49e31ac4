"""Reminders through the bot on loopback: /remind, /tasks with its buttons, /timezone,
a recurring task driven by a test clock, a failing delivery that stops nothing, and a
stranger who can neither see nor change another user's task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.render import html_to_plain
from bot.task_texts import ENGLISH_TASKS, RUSSIAN_TASKS
from core.deps import Deps
from core.records import parse_timestamp
from tests.support.bot_api_server import ApiCall, FakeUser
from tests.support.bot_harness import RunningBot, buttons, command, running_bot

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
FAST = {"task_poll_s": 0.2, "turn_wait_s": 0.1}


async def press(running: RunningBot, user: FakeUser, menu: ApiCall, button: dict) -> str:
    """Press a button under `menu`; the text of the answer to the press."""
    api = running.api
    before = len(api.calls_of("answerCallbackQuery"))
    api.press_button(user, menu.result, button["callback_data"])
    await api.wait_until(lambda: len(api.calls_of("answerCallbackQuery")) > before, what="answer")
    return api.calls_of("answerCallbackQuery")[-1].params.get("text", "")


def plain(call: ApiCall) -> str:
    return html_to_plain(call.params["text"])


async def test_remind_list_pause_resume_cancel(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [ALICE], **FAST) as running:
        deps = running.deps
        confirmed = await command(running, ALICE, "/remind tomorrow at 9:00 call mom")
        [task] = deps.store.tasks.of_user(ALICE.id)
        assert task["request"] == "call mom" and task["rule"] is None
        due = parse_timestamp(task["next_run_at"])
        assert due.strftime("%Y-%m-%d 09:00") in plain(confirmed) and "call mom" in plain(confirmed)

        menu = await command(running, ALICE, "/tasks")
        assert "1. call mom (" in plain(menu) and "UTC" in plain(menu)
        pause, cancel = buttons(menu)
        assert pause["text"] == "⏸ Pause 1" and cancel["text"] == "✖ Cancel 1"
        assert await press(running, ALICE, menu, pause) == ENGLISH_TASKS.changed["pause"]
        assert deps.store.tasks.get(ALICE.id, task["id"])["state"] == "paused"
        edited = running.api.calls_of("editMessageText")[-1]
        assert "paused" in plain(edited)
        resume, _ = buttons(edited)
        assert await press(running, ALICE, menu, resume) == ENGLISH_TASKS.changed["resume"]
        assert deps.store.tasks.get(ALICE.id, task["id"])["state"] == "active"
        assert await press(running, ALICE, menu, cancel) == ENGLISH_TASKS.changed["cancel"]
        assert deps.store.tasks.get(ALICE.id, task["id"])["state"] == "cancelled"
        assert plain(running.api.calls_of("editMessageText")[-1]) == ENGLISH_TASKS.tasks_empty
        assert await press(running, ALICE, menu, cancel) == ENGLISH_TASKS.task_gone
        menus = [call.params["commands"] for call in running.api.calls_of("setMyCommands")]
        listed = [{item["command"] for item in menu} for menu in menus]
        assert len(listed) == 2
        assert all({"remind", "tasks", "timezone"} <= names for names in listed)


async def test_bad_input_is_one_line_with_examples(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [ALICE, BORIS], **FAST) as running:
        for user, text in [(ALICE, "/remind whenever stretch"), (BORIS, "/remind когда-нибудь")]:
            reply = plain(await command(running, user, text))
            assert "\n" not in reply and "/remind" in reply and "·" in reply
        assert plain(await command(running, ALICE, "/remind")) == ENGLISH_TASKS.remind_usage
        assert running.deps.store.tasks.of_user(ALICE.id) == []
        assert running.deps.store.tasks.of_user(BORIS.id) == []
        zone = plain(await command(running, BORIS, "/timezone Atlantis"))
        assert zone == RUSSIAN_TASKS.timezone_bad.format(name="Atlantis")
        zone = plain(await command(running, BORIS, "/timezone moscow"))
        assert zone == RUSSIAN_TASKS.timezone_set.format(zone="Europe/Moscow")
        confirmed = plain(await command(running, BORIS, "/remind завтра в 9:00 позвонить маме"))
        assert "09:00 MSK" in confirmed and "позвонить маме" in confirmed
        [task] = running.deps.store.tasks.of_user(BORIS.id)
        assert parse_timestamp(task["next_run_at"]).astimezone(UTC).hour == 6


async def test_a_recurring_task_fires_at_each_of_its_times(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [BORIS], **FAST) as running:
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, BORIS, "/remind каждый день в 9:00 зарядка")
        [task] = running.deps.store.tasks.of_user(BORIS.id)
        times = []
        for count in (1, 2, 3):
            due = parse_timestamp(running.deps.store.tasks.get(BORIS.id, task["id"])["next_run_at"])
            times.append(due)
            before = len(running.api.sent_messages(BORIS.id))
            now[0] = due - timedelta(seconds=5)
            await asyncio.sleep(1.0)
            assert len(running.api.sent_messages(BORIS.id)) == before, "not before its time"
            now[0] = due + timedelta(seconds=1)
            sent = await running.api.wait_for_sent(BORIS.id, before + 1)
            assert plain(sent[-1]) == "⏰ зарядка", count
            for _ in range(50):  # the run is recorded (the task moved on) just after the send
                if len(running.deps.store.tasks.runs(BORIS.id, task["id"], limit=10)) == count:
                    break
                await asyncio.sleep(0.1)
        assert [t.hour for t in times] == [9, 9, 9]
        assert times[1] - times[0] == times[2] - times[1] == timedelta(days=1)
        runs = running.deps.store.tasks.runs(BORIS.id, task["id"], limit=10)
        assert sorted(parse_timestamp(run["due_at"]) for run in runs) == times
        assert not any(run["late"] for run in runs)


async def test_a_stranger_sees_and_changes_nothing(make_deps: Callable[..., Deps]) -> None:
    async with running_bot(make_deps, [ALICE, BORIS], **FAST) as running:
        deps = running.deps
        await command(running, ALICE, "/remind in 2 hours water the plants")
        [task] = deps.store.tasks.of_user(ALICE.id)
        menu = await command(running, ALICE, "/tasks")
        pause, cancel = buttons(menu)
        assert plain(await command(running, BORIS, "/tasks")) == RUSSIAN_TASKS.tasks_empty
        for button in (pause, cancel):
            assert await press(running, BORIS, menu, button) == RUSSIAN_TASKS.task_gone
        assert deps.store.tasks.get(ALICE.id, task["id"])["state"] == "active"
        assert deps.store.tasks.get(BORIS.id, task["id"]) is None
        assert "water the plants" in plain(await command(running, ALICE, "/tasks"))


async def test_a_failed_delivery_stops_nothing(make_deps: Callable[..., Deps]) -> None:
    """Two reminders due together; the first send fails for a passing reason (flood
    control longer than the session waits): the other still arrives, and the failed one
    arrives once its claim expires."""
    async with running_bot(make_deps, [ALICE, BORIS], task_claim_lease_s=1.0, **FAST) as running:
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, ALICE, "/remind in 1 hour stretch")
        await command(running, BORIS, "/remind через 1 час размяться")
        running.api.rate_limit_next("sendMessage", retry_after=3600)
        now[0] += timedelta(hours=1, seconds=1)
        api = running.api
        reminders = lambda: [len(api.sent_messages(u.id)) - 1 for u in (ALICE, BORIS)]  # noqa: E731
        await api.wait_until(lambda: sum(reminders()) == 1, what="the other reminder")
        await asyncio.sleep(1.0)
        assert sum(reminders()) == 1, "the refused run waits for its claim to expire"
        now[0] += timedelta(seconds=2)
        await api.wait_until(lambda: reminders() == [1, 1], what="the refused reminder")
        await asyncio.sleep(1.0)
        assert reminders() == [1, 1]
        got = [plain(api.sent_messages(u.id)[-1]) for u in (ALICE, BORIS)]
        assert got == ["⏰ stretch", "⏰ размяться"]
        refused = running.api.calls_of("sendMessage", ok_only=False)
        assert [call.status for call in refused].count(429) == 1


async def test_a_chat_gone_for_good_ends_the_run(make_deps: Callable[..., Deps]) -> None:
    """A user who blocked the bot and a chat that is gone: each run is recorded once as
    undeliverable, the one-time task is done, the recurring one moves on; no retries."""
    async with running_bot(make_deps, [ALICE, BORIS], task_claim_lease_s=1.0, **FAST) as running:
        api, store = running.api, running.deps.store.tasks
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, ALICE, "/remind in 1 hour stretch")
        await command(running, BORIS, "/remind каждый день в 9:00 зарядка")
        [once], [daily] = store.of_user(ALICE.id), store.of_user(BORIS.id)
        api.fail_next(
            "sendMessage", status=403, description="Forbidden: bot was blocked by the user"
        )
        api.fail_next("sendMessage", status=400, description="Bad Request: chat not found")
        due = max(parse_timestamp(t["next_run_at"]) for t in (once, daily))
        now[0] = due + timedelta(seconds=1)
        refused = lambda: [c for c in api.calls_of("sendMessage", ok_only=False) if c.status != 200]  # noqa: E731
        await api.wait_until(lambda: len(refused()) == 2, what="both sends refused")
        await api.wait_until(lambda: store.runs(BORIS.id, daily["id"], limit=5), what="a run")
        now[0] += timedelta(seconds=5)
        await asyncio.sleep(1.0)
        assert len(refused()) == 2 and len(api.sent_messages(ALICE.id)) == 1, "never retried"
        assert store.get(ALICE.id, once["id"])["state"] == "done"
        moved = store.get(BORIS.id, daily["id"])
        assert moved["state"] == "active"
        assert parse_timestamp(moved["next_run_at"]) == parse_timestamp(
            daily["next_run_at"]
        ) + timedelta(days=1)
        runs = [
            *store.runs(ALICE.id, once["id"], limit=5),
            *store.runs(BORIS.id, daily["id"], limit=5),
        ]
        assert [run["fallback_reason"] for run in runs] == ["undeliverable", "undeliverable"]


@pytest.mark.parametrize(("timeout_s", "delivered"), [(10.0, True), (0.5, False)])
async def test_shutdown_lets_the_pass_under_way_finish(
    make_deps: Callable[..., Deps], timeout_s: float, delivered: bool
) -> None:
    """Shutdown while a reminder waits out flood control: within the shutdown timeout it
    is sent and recorded; past it, the run is cut off and left to its claim."""
    settings = {**FAST, "shutdown_timeout_s": timeout_s}
    async with running_bot(make_deps, [ALICE], task_claim_lease_s=60.0, **settings) as running:
        api, store = running.api, running.deps.store.tasks
        now = [datetime.now(UTC)]
        running.dispatcher["scheduler"].clock = lambda: now[0]
        await command(running, ALICE, "/remind in 1 hour stretch")
        [task] = store.of_user(ALICE.id)
        api.rate_limit_next("sendMessage", retry_after=2)
        now[0] += timedelta(hours=1, seconds=1)
        limited = lambda: [c for c in api.calls_of("sendMessage", ok_only=False) if c.status == 429]  # noqa: E731
        await api.wait_until(limited, what="the reminder held by flood control")
    reminders = [plain(call) for call in api.sent_messages(ALICE.id)[1:]]
    assert reminders == (["⏰ stretch"] if delivered else [])
    assert store.get(ALICE.id, task["id"])["state"] == ("done" if delivered else "active")
    assert len(store.runs(ALICE.id, task["id"], limit=5)) == int(delivered)
