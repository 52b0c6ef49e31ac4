"""Saved sessions through the real ingest path (real SQLite + Chroma): a malformed file
stores nothing, the corrected one is stored and archived whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.memory import archive_user
from core.deps import Deps
from stores.saved_sessions import SessionFormatError, read_session
from tests.support.sessions import GOOD_SESSION, session_line, write_session


async def ingest(deps: Deps, path: Path, user_id: int) -> None:
    """The ingest path of the command line: read the whole file, store it, archive it."""
    deps.indexer.store_messages(user_id, read_session(path))
    await archive_user(deps, user_id, archive_all=True)


async def test_ingesting_a_malformed_file_stores_nothing(tmp_path: Path, deps: Deps):
    bad = session_line(id="z", role="robot", content="beep", created_at="2026-03-02T10:00:00")
    path = write_session(tmp_path, [*GOOD_SESSION, bad])

    with pytest.raises(SessionFormatError, match=":4: role"):
        await ingest(deps, path, user_id=1)

    assert deps.store.messages.count(1) == 0
    assert deps.store.sessions.user_ids() == []
    assert deps.vectors.count("messages", 1) == 0


async def test_ingesting_the_corrected_file_stores_and_archives_every_message(
    tmp_path: Path, deps: Deps
):
    path = write_session(tmp_path, GOOD_SESSION)

    await ingest(deps, path, user_id=1)

    stored = deps.store.messages.all_of(1)
    assert [row["content"] for row in stored] == [
        "Привет! Planning a trip",
        "Where to?",
        "Valencia",
    ]
    assert deps.vectors.count("messages", 1) == 3
    assert all(row["topic_id"] is not None for row in stored)
