"""`topica bot` as a real process against the fake Bot API on loopback.

The command line the user runs (`topica bot`, no `--verbose`), its environment built
from `TOPICA_*` settings, its stderr kept in a file so a test can read the log even after
a kill -9.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.bot_api_server import FakeBotAPI
from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

TOPICA_BOT = "import sys; from cli.main import main; sys.exit(main(['bot']))"


@dataclass
class BotProcess:
    process: asyncio.subprocess.Process
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    async def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, and the exit status once it has shut down."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), timeout_s)

    async def kill(self) -> None:
        """kill -9: no shutdown of any kind."""
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


async def start_bot_process(
    api: FakeBotAPI, data_dir: Path, log_path: Path, **settings: Any
) -> BotProcess:
    """Start `topica bot` for this fake Bot API; `settings` become `TOPICA_<NAME>` variables.
    Returns once it polls."""
    environment = {
        **untraced_environment(),
        "TOPICA_TELEGRAM_TOKEN": api.token,
        "TOPICA_TELEGRAM_API_URL": api.base_url,
        "TOPICA_DATA_DIR": str(data_dir),
        **{f"TOPICA_{name.upper()}": str(value) for name, value in settings.items()},
    }
    polls_before = len(api.calls_of("getUpdates", ok_only=False))
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", TOPICA_BOT, env=environment, cwd=ROOT, stderr=log
        )
    running = BotProcess(process, log_path)
    try:
        await api.wait_until(
            lambda: (
                len(api.calls_of("getUpdates", ok_only=False)) > polls_before
                or process.returncode is not None
            ),
            within_s=90,
            what="polling",
        )
    except BaseException:
        await running.kill()
        raise
    if process.returncode is not None:
        raise RuntimeError(f"topica bot exited with {process.returncode}:\n{running.log()}")
    return running
