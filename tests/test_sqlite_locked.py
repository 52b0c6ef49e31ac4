"""A locked SQLite database: writers wait, a lock held too long is a clear error that
loses nothing, and the memory graph's retry policy rides out a lock held for a while."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.memory import archive_user
from core.settings import Settings
from stores.relational import RelationalStore
from stores.saved_sessions import read_session
from stores.services import build_deps

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "tests" / "data" / "three_sittings.jsonl"
pytestmark = pytest.mark.timeout(120)


@contextmanager
def locked(path: Path, seconds: float) -> Iterator[threading.Event]:
    """Another connection holds an exclusive write lock for `seconds`."""
    taken = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        taken.set()
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(5)
    try:
        yield taken
    finally:
        holder.join()


def test_a_writer_waits_for_a_short_lock(tmp_path: Path) -> None:
    path = tmp_path / "topica.sqlite3"
    store = RelationalStore(path, busy_timeout_s=5)
    messages = read_session(SESSION)[:3]
    with locked(path, 0.8):
        started = time.monotonic()
        stored = store.messages.add(1, messages)
        waited = time.monotonic() - started
    assert len(stored) == 3
    assert waited >= 0.5, f"the write did not wait for the lock ({waited:.2f} s)"


def test_a_lock_held_too_long_is_a_clear_error_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "topica.sqlite3"
    store = RelationalStore(path, busy_timeout_s=0.2)
    messages = read_session(SESSION)[:3]
    with locked(path, 1.5), pytest.raises(sqlite3.OperationalError, match="locked"):
        store.messages.add(1, messages)
    assert store.messages.count(1) == 0
    assert len(store.messages.add(1, messages)) == 3


async def test_memory_graph_retries_through_a_lock(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, sqlite_busy_timeout_s=0.2)
    deps = build_deps(settings)
    session = read_session(SESSION)
    deps.indexer.store_messages(1, session)
    refused: list[sqlite3.OperationalError] = []
    save_topics = deps.store.topics.save

    def observed_save_topics(*args, **kwargs):
        try:
            return save_topics(*args, **kwargs)
        except sqlite3.OperationalError as error:
            refused.append(error)
            raise

    deps.store.topics.save = observed_save_topics
    holder = asyncio.create_task(asyncio.to_thread(hold_lock, settings.sqlite_path, 1.5))
    await asyncio.sleep(0.1)
    results = await archive_user(deps, 1, archive_all=True)
    await holder
    assert refused, "the lock never got in the way: the test proves nothing"
    assert results, "nothing was archived"
    members = [m["topic_id"] for m in deps.store.messages.all_of(1)]
    assert None not in members and len(members) == len(session)
    assert deps.vectors.count("topics", 1) == len(deps.store.topics.all_of(1))


def hold_lock(path: Path, seconds: float) -> None:
    with locked(path, seconds):
        pass
