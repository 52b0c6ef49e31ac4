"""No secret in any log line: a failed file download (its URL holds the bot token)
logged by `topica bot` in both log formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_process import start_bot_process

pytestmark = pytest.mark.timeout(180)

ALICE = FakeUser(101, "Alice", "en")
SECRET = "TEST-TOKEN"


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_a_failed_download_is_logged_without_the_token(tmp_path: Path, log_format: str):
    async with FakeBotAPI(token=f"123456:{SECRET}") as api:
        bot = await start_bot_process(
            api, tmp_path / "data", tmp_path / "bot.log", allowed_user_ids=ALICE.id,
            turn_wait_s=0.1, log_format=log_format,
        )  # fmt: skip
        try:
            api.fail_next("download", status=500, times=10)
            api.send_document(ALICE, b"notes", file_name="notes.txt", mime_type="text/plain")
            await api.wait_for_sent(ALICE.id, 1, within_s=90)
        finally:
            status = await bot.stop()
    log = bot.log()
    assert status == 0, log
    assert "download of notes.txt failed" in log, log
    assert "/file/bot***/" in log, "the URL is logged, its token hidden"
    assert SECRET not in log
