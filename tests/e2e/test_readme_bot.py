"""The README's Telegram steps, followed as written against the fake Bot API: history
ingested under `--user` = the Telegram id, the token and the allowlist in `.env`, then
`topica bot` (long polling) answers that user from that memory. The only thing the test
adds is where the Bot API is (`TOPICA_TELEGRAM_API_URL`)."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.paths import ROOT, THREE_SITTINGS
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(300)

ME = FakeUser(424242, "Alexei", "ru")
TOPICA = Path(sys.executable).parent / "topica"  # `.venv/bin/topica`


def readme_bot_steps() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## The Telegram bot", 1)[1].split("\n## ", 1)[0]


async def topica(cwd: Path, *args: str, **extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(TOPICA),
        *args,
        env=untraced_environment() | extra,
        cwd=cwd,
        stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
    )


async def test_the_readme_steps_give_a_bot_that_answers_from_your_history(tmp_path: Path):
    steps = readme_bot_steps()
    for named in ("TOPICA_TELEGRAM_TOKEN=", "TOPICA_ALLOWED_USER_IDS=", "--user", "topica bot"):
        assert named in steps, named
    ingest = re.search(r"`(topica ingest \S+ --user) \d+`", steps)
    assert ingest, "step 4 ingests under the Telegram id"

    command = ingest.group(1).split()[1:]  # ["ingest", FILE, "--user"]
    shutil.copy(THREE_SITTINGS, tmp_path / command[1])
    process = await topica(tmp_path, *command, str(ME.id))
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=200)
    assert process.returncode == 0, stderr.decode()[-2000:]

    async with FakeBotAPI() as api:
        (tmp_path / ".env").write_text(
            f"TOPICA_TELEGRAM_TOKEN={api.token}\nTOPICA_ALLOWED_USER_IDS={ME.id}\n"
            "TOPICA_TURN_WAIT_S=0.1\n",
            encoding="utf-8",
        )
        bot = await topica(tmp_path, "bot", TOPICA_TELEGRAM_API_URL=api.base_url)
        try:
            api.send_text(ME, "Какой темп нужен для полумарафона за 1:45?")
            [answer] = await api.wait_for_sent(ME.id, 1, within_s=150)
        finally:
            if bot.returncode is None:
                bot.terminate()
            _, log = await asyncio.wait_for(bot.communicate(), timeout=60)
    text = answer.params["text"]
    assert "4:58" in text, (text, log.decode()[-2000:])  # only the ingested history says it
