"""Chroma in server mode (`chroma run` on 127.0.0.1), and a server that stops.

Incoming messages are stored in SQLite whatever the vector store does; with the
server down, the error is clear and nothing is lost; once it is back, the next
run indexes what was waiting and archives as usual.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.memory import archive_user
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.ports import VECTOR_KINDS as KINDS
from core.settings import Settings
from stores.saved_sessions import read_session
from stores.services import build_deps
from tests.support.chroma_server import ChromaServer
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION
from tests.support.processes import environment_without

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    yield server
    server.stop()


def server_deps(tmp_path: Path, server: ChromaServer) -> Deps:
    return build_deps(
        Settings(data_dir=tmp_path / "data", chroma_host="127.0.0.1", chroma_port=server.port)
    )


def assert_index_matches_store(deps: Deps, user_id: int) -> None:
    assert deps.vectors.count("topics", user_id) == len(deps.store.topics.all_of(user_id))
    assert deps.vectors.count("messages", user_id) == deps.store.messages.count(user_id)
    for kind in KINDS:
        assert deps.store.vector_queue.pending(user_id, kind) == []


async def test_server_mode_archives_and_searches(tmp_path: Path, chroma: ChromaServer) -> None:
    deps = server_deps(tmp_path, chroma)
    deps.indexer.store_messages(1, read_session(SESSION))
    await archive_user(deps, 1, archive_all=True)
    assert deps.store.messages.unarchived(1) == []
    assert_index_matches_store(deps, 1)
    vet = deps.embedder.encode_query("ветеринар сказал про почки кота")
    best_id, _ = deps.vectors.query("topics", 1, vet, 1)[0]
    assert "Марципан" in deps.store.topics.get(1, best_id)["summary"]
    assert deps.vectors.query("topics", 2, vet, 5) == []


async def test_a_stopped_server_loses_nothing(tmp_path: Path, chroma: ChromaServer) -> None:
    session = read_session(SESSION)
    first, second = session[:16], session[16:]
    deps = server_deps(tmp_path, chroma)
    deps.indexer.store_messages(1, first)
    await archive_user(deps, 1, archive_all=True)
    topics_before = len(deps.store.topics.all_of(1))

    chroma.stop()
    with pytest.raises(VectorStoreUnavailable):
        deps.indexer.store_messages(1, second)
    assert deps.store.messages.count(1) == len(session), "messages must be stored first"
    assert len(deps.store.vector_queue.pending(1, "messages")) == len(second)
    with pytest.raises(VectorStoreUnavailable):
        await archive_user(deps, 1, archive_all=True)
    assert len(deps.store.topics.all_of(1)) == topics_before

    chroma.start()
    await archive_user(deps, 1, archive_all=True)
    assert deps.store.messages.unarchived(1) == []
    assert_index_matches_store(deps, 1)
    archived = [m["topic_id"] for m in deps.store.messages.all_of(1)]
    assert None not in archived and len(archived) == len(session)


def test_cli_reports_a_stopped_server_in_one_line(tmp_path: Path, chroma: ChromaServer) -> None:
    chroma.stop()
    environment = environment_without("TOPICA_") | {
        "TOPICA_CHROMA_HOST": "127.0.0.1",
        "TOPICA_CHROMA_PORT": str(chroma.port),
    }
    finished = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", str(SESSION), "--data-dir", str(tmp_path)],
        env=environment,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 3
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1 and "vector store unavailable" in lines[0], finished.stderr
    deps = build_deps(Settings(data_dir=tmp_path))
    assert deps.store.messages.count(1) == len(read_session(SESSION))
