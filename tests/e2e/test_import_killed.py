"""A `topica import telegram` process killed with SIGKILL part-way through archiving, then
run again on the same export: every message is there once, none is lost, and all of them
end up archived into topics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from bench.import_scale import generate
from core.settings import Settings
from stores.services import build_relational_store
from tests.support.paths import ROOT
from tests.support.processes import environment_without

pytestmark = pytest.mark.timeout(240)

USER = 5
MESSAGES = 150


def start_import(export: Path, data_dir: Path) -> subprocess.Popen:
    command = ["import", "telegram", str(export), "--user", str(USER)]
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", *command, "--data-dir", str(data_dir), "--json"],
        cwd=ROOT,
        env=environment_without("TOPICA_"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_while_archiving(process: subprocess.Popen, data_dir: Path) -> tuple[int, int]:
    """SIGKILL `process` once its messages are stored and some but not all archived; the
    stored and unarchived counts seen just before."""
    store = build_relational_store(Settings(data_dir=data_dir))
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None:
            messages = store.messages.all_of(USER) if data_dir.exists() else []
            unarchived = sum(message["topic_id"] is None for message in messages)
            if 0 < unarchived < len(messages):
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
                return len(messages), unarchived
            time.sleep(0.05)
    finally:
        store.close()
    process.kill()
    _, err = process.communicate(timeout=30)
    pytest.fail(f"the import ended before it was caught part-way (rc {process.returncode}): {err}")


def test_a_killed_import_reruns_without_loss_or_doubles(tmp_path: Path, store_engine: str):
    export = tmp_path / "result.json"
    generate(export, MESSAGES, chats=3)
    data_dir = tmp_path / "data"

    stored, unarchived = kill_while_archiving(start_import(export, data_dir), data_dir)
    assert stored == MESSAGES and 0 < unarchived < MESSAGES

    rerun = start_import(export, data_dir)
    out, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err[-2000:]
    report = json.loads(out)
    assert report["new_messages"] == 0 and report["messages"] == MESSAGES

    store = build_relational_store(Settings(data_dir=data_dir))
    try:
        messages = store.messages.all_of(USER)
        topics = store.topics.all_of(USER)
    finally:
        store.close()
    ids = Counter(message["external_id"] for message in messages)
    assert len(ids) == MESSAGES and max(ids.values()) == 1
    assert all(message["topic_id"] is not None for message in messages)
    assert {message["topic_id"] for message in messages} <= {topic["id"] for topic in topics}
