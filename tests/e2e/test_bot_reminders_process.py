"""Reminders from the real `topica bot` process: one set for five seconds ahead arrives
once, close to its time; a bot killed with SIGKILL before the time, or after it claimed
the run and before it sent it, delivers it once when started again."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.render import html_to_plain
from core.records import parse_timestamp
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_process import BotProcess, start_bot_process

pytestmark = pytest.mark.timeout(240)

BORIS = FakeUser(202, "Борис", "ru")
REMINDER = "⏰ выпить воды"


async def start(api: FakeBotAPI, tmp_path: Path) -> BotProcess:
    return await start_bot_process(
        api,
        tmp_path / "data",
        tmp_path / "bot.log",
        allowed_user_ids=BORIS.id,
        turn_wait_s=0.1,
        task_poll_s=0.5,
        task_claim_lease_s=3,
    )


async def remind(api: FakeBotAPI, text: str) -> None:
    api.send_text(BORIS, text)
    [confirmed] = await api.wait_for_sent(BORIS.id, 1, within_s=60)
    assert "выпить воды" in html_to_plain(confirmed.params["text"])


def reminders(api: FakeBotAPI) -> list[str]:
    texts = [html_to_plain(call.params["text"]) for call in api.sent_messages(BORIS.id)]
    return [text for text in texts if text.startswith("⏰ выпить")]


def due_at(tmp_path: Path) -> datetime:
    with sqlite3.connect(tmp_path / "data" / "topica.sqlite3") as db:
        [(due,)] = db.execute("SELECT next_run_at FROM tasks WHERE user_id = ?", (BORIS.id,))
    return parse_timestamp(due)


async def restart_and_deliver(api: FakeBotAPI, tmp_path: Path, bot: BotProcess) -> None:
    """SIGKILL `bot` before the reminder is sent; a new process sends it, once."""
    await bot.kill()
    assert reminders(api) == []
    bot = await start(api, tmp_path)
    try:
        await api.wait_until(lambda: reminders(api), within_s=30, what="the reminder")
        await asyncio.sleep(2)
    finally:
        status = await bot.stop()
    assert status == 0, bot.log()
    [sent] = reminders(api)
    assert sent.startswith(REMINDER), "once; marked late when the restart took over a minute"


async def test_a_reminder_arrives_once_near_its_time(tmp_path: Path) -> None:
    async with FakeBotAPI() as api:
        bot = await start(api, tmp_path)
        try:
            await remind(api, "/remind через 5 секунд выпить воды")
            due = due_at(tmp_path)
            await api.wait_until(lambda: reminders(api), within_s=20, what="the reminder")
            arrived = datetime.now(UTC)
            await asyncio.sleep(2)
        finally:
            status = await bot.stop()
    assert status == 0, bot.log()
    assert reminders(api) == [REMINDER]
    assert -1 <= (arrived - due).total_seconds() <= 10


async def test_killed_before_the_time_still_delivers_once(tmp_path: Path) -> None:
    async with FakeBotAPI() as api:
        bot = await start(api, tmp_path)
        await remind(api, "/remind через 5 секунд выпить воды")
        await restart_and_deliver(api, tmp_path, bot)


async def test_killed_after_claiming_still_delivers_once(tmp_path: Path) -> None:
    """The reminder's send is held by Telegram's flood control (429, retry after 30 s) when
    the bot is killed: its claim expires and the next process sends it, once."""
    async with FakeBotAPI() as api:
        bot = await start(api, tmp_path)
        await remind(api, "/remind через 3 секунды выпить воды")
        api.rate_limit_next("sendMessage", retry_after=30)
        await api.wait_until(
            lambda: [c for c in api.calls_of("sendMessage", ok_only=False) if c.status == 429],
            within_s=20,
            what="the held send",
        )
        await restart_and_deliver(api, tmp_path, bot)
