"""Binary junk where a session file should be: refused with one line from a real
`topica ingest` process, and nothing stored."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from stores.saved_sessions import SessionFormatError, read_session
from tests.support.paths import ROOT
from tests.support.processes import environment_without

pytestmark = pytest.mark.timeout(180)


def test_binary_junk_as_a_session_is_refused_with_nothing_stored(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(os.urandom(4096) + b"\x00\xff\xfe")
    with pytest.raises(SessionFormatError, match="not UTF-8"):
        read_session(junk)
    finished = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", str(junk), "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=environment_without("TOPICA_"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and "not UTF-8" in finished.stderr
    assert not (tmp_path / "topica.sqlite3").exists() or _message_count(tmp_path) == 0


def _message_count(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "topica.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
