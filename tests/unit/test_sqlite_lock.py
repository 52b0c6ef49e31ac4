"""A locked SQLite database: writers wait, and a lock held too long is a clear error that
loses nothing (the memory graph riding it out: tests/integration/test_sqlite_lock_retry.py)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from stores.relational import RelationalStore
from stores.saved_sessions import read_session
from tests.support.paths import THREE_SITTINGS
from tests.support.sqlite_lock import locked

pytestmark = pytest.mark.timeout(120)


def test_a_writer_waits_for_a_short_lock(tmp_path: Path) -> None:
    path = tmp_path / "topica.sqlite3"
    store = RelationalStore(path, busy_timeout_s=5)
    messages = read_session(THREE_SITTINGS)[:3]
    with locked(path, 0.8):
        started = time.monotonic()
        stored = store.messages.add(1, messages)
        waited = time.monotonic() - started
    assert len(stored) == 3
    assert waited >= 0.5, f"the write did not wait for the lock ({waited:.2f} s)"


def test_a_lock_held_too_long_is_a_clear_error_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "topica.sqlite3"
    store = RelationalStore(path, busy_timeout_s=0.2)
    messages = read_session(THREE_SITTINGS)[:3]
    with locked(path, 1.5), pytest.raises(sqlite3.OperationalError, match="locked"):
        store.messages.add(1, messages)
    assert store.messages.count(1) == 0
    assert len(store.messages.add(1, messages)) == 3
