"""What `topica bot` logs at the default level (no `--verbose`): how it runs, a warning
when nobody may use it, and every refused update with the sender pseudonymised."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.tracing import user_key
from tests.support.bot_api_server import FakeBotAPI, FakeUser, group_chat
from tests.support.bot_process import start_bot_process

pytestmark = pytest.mark.timeout(180)

ALICE = FakeUser(101, "Alice", "en")
MALLORY = FakeUser(66613, "Mallory", "en")


async def test_startup_line_and_refused_updates_are_logged(tmp_path: Path):
    async with FakeBotAPI() as api:
        bot = await start_bot_process(
            api, tmp_path / "data", tmp_path / "bot.log", allowed_user_ids=ALICE.id, turn_wait_s=0.1
        )
        try:
            api.send_text(MALLORY, "let me in")
            api.send_text(ALICE, "/memory", chat=group_chat())
            api.send_text(ALICE, "hello")
            await api.wait_for_sent(ALICE.id, 1, within_s=60)
            await api.wait_until(lambda: api.sent_messages(group_chat()["id"]), what="refusal")
        finally:
            status = await bot.stop()
    log = bot.log()
    assert status == 0, log
    assert (
        f"topica bot starting: mode polling, 1 allowed user(s), data dir {tmp_path / 'data'}" in log
    )
    assert "allowlist is empty" not in log
    assert f"from user {user_key(MALLORY.id)} (not on the allowlist)" in log
    assert f"a command from user {user_key(ALICE.id)} refused" in log
    assert str(MALLORY.id) not in log, "a stranger's id is pseudonymised"


async def test_an_empty_allowlist_is_a_warning(tmp_path: Path):
    async with FakeBotAPI() as api:
        bot = await start_bot_process(api, tmp_path / "data", tmp_path / "bot.log")
        try:
            api.send_text(ALICE, "hello")
            await api.wait_until(lambda: api.pending_updates() == 0, what="consumed")
            await asyncio.sleep(0.5)
        finally:
            status = await bot.stop()
    log = bot.log()
    assert status == 0, log
    assert "0 allowed user(s)" in log
    assert "WARNING bot.app: the allowlist is empty" in log
    assert f"from user {user_key(ALICE.id)} (not on the allowlist)" in log
    assert api.sent_messages() == []
