"""A locked SQLite database under the memory graph: its retry policy rides out a lock held
for a while, and every message is archived (writers waiting, a lock held too long:
tests/unit/test_sqlite_lock.py)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from app.memory import archive_user
from core.settings import Settings
from stores.saved_sessions import read_session
from stores.services import build_deps
from tests.support.paths import THREE_SITTINGS
from tests.support.sqlite_lock import hold_lock

pytestmark = pytest.mark.timeout(120)


async def test_memory_graph_retries_through_a_lock(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, sqlite_busy_timeout_s=0.2)
    deps = build_deps(settings)
    session = read_session(THREE_SITTINGS)
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
