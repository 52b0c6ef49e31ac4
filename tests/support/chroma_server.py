"""A real `chroma run` process on loopback that a test can stop and start again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.processes import free_port


class ChromaServer:
    """A real `chroma run` process that a test can stop and start again on the same data."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("chroma", path=str(Path(sys.executable).parent))
        assert binary, "the chroma command comes with the chromadb package"
        self.process = subprocess.Popen(
            [
                binary,
                "run",
                "--path",
                str(self.path),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                url = f"http://127.0.0.1:{self.port}/api/v2/heartbeat"
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert self.process.poll() is None, "chroma run exited"
            assert time.monotonic() < deadline, "chroma run did not start"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=15)
