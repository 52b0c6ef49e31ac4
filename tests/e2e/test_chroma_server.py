"""Chroma in server mode (`chroma run` on 127.0.0.1), and a server that stops.

Incoming messages are stored in SQLite whatever the vector store does; with the
server down, the error is clear and nothing is lost; once it is back, the next
run indexes what was waiting and archives as usual.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from app.memory import archive_user
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.ports import VECTOR_KINDS as KINDS
from core.settings import Settings
from nodes.response.vector_reads import VectorReads
from stores import vectors as vectors_module
from stores.saved_sessions import read_session
from stores.services import build_deps
from stores.vectors import VectorStore, build_chroma_client
from tests.support.chroma_server import ChromaServer
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION
from tests.support.processes import environment_without

pytestmark = pytest.mark.timeout(180)


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


@dataclass
class Race:
    """What the searches of `race_new_collections` met."""

    failures: list[BaseException] = field(default_factory=list)
    answers: list[tuple[float, int, int]] = field(default_factory=list)
    """(asked at, user id, fewest hits of the queries)"""
    filled: dict[int, float] = field(default_factory=dict)
    """User id: when their collection's first records were stored."""


def race_new_collections(
    settings: Settings, search: Callable[[VectorStore, int, list[np.ndarray]], list[list]]
) -> Race:
    """One process creates and fills 40 new users' collections (50 topic vectors at a
    time) while three threads of another `search` the newest one, again and again."""
    writer = VectorStore(lambda: build_chroma_client(settings), "race")
    reader = VectorStore(lambda: build_chroma_client(settings), "race")
    rng = np.random.default_rng(7)
    created: list[int] = []
    race = Race()
    done = threading.Event()

    def fill() -> None:
        try:
            for user_id in range(1, 41):
                assert writer.count("topics", user_id) == 0  # the collection is created
                created.append(user_id)
                for batch in range(3):
                    ids = [user_id * 1000 + batch * 50 + n for n in range(50)]
                    writer.upsert("topics", user_id, ids, rng.standard_normal((50, 512)))
                    race.filled.setdefault(user_id, time.monotonic())
                    time.sleep(0.01)
        except Exception as error:
            race.failures.append(error)
        finally:
            done.set()

    def searches() -> None:
        query = list(np.random.default_rng().standard_normal((2, 512)))
        while not done.is_set():
            if not created:
                time.sleep(0.005)
                continue
            user_id = created[-1]
            asked = time.monotonic()
            try:
                hits = search(reader, user_id, query)
            except Exception as error:
                race.failures.append(error)
                continue
            race.answers.append((asked, user_id, min(len(found) for found in hits)))

    threads = [
        threading.Thread(target=fill),
        *(threading.Thread(target=searches) for _ in range(3)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return race


def test_a_collection_is_searched_from_its_first_moment(
    tmp_path: Path, chroma: ChromaServer
) -> None:
    """Another process's new collection searched at once (a memory worker archiving a
    user whose turn another replica is answering). A query in a collection's first
    moments can fail on the server ("Nothing found on disk"; with no `SERVER_RETRY_S`,
    243 to 264 of this test's queries failed in three runs); it is tried again, so every
    query answers, and every one asked after the collection's first records were stored
    finds some."""
    settings = Settings(data_dir=tmp_path, chroma_host="127.0.0.1", chroma_port=chroma.port)
    race = race_new_collections(
        settings, lambda reader, user_id, query: reader.nearest("topics", user_id, query, 5)
    )
    assert not race.failures, f"{len(race.failures)} failed, first: {race.failures[0]!r}"
    assert len({user_id for _, user_id, _ in race.answers}) >= 30, "most collections searched"
    assert all(
        hits == 5
        for asked, user_id, hits in race.answers
        if asked > race.filled.get(user_id, asked)
    )


def test_a_read_the_server_keeps_failing_leaves_the_turn_full_text(
    tmp_path: Path, chroma: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no waits left to try again (`SERVER_RETRY_S` empty), the same race's failed
    reads are `VectorStoreUnavailable`, which a turn's `VectorReads` answers with no hits
    (the turn goes on with full-text search and says so), never an error."""
    monkeypatch.setattr(vectors_module, "SERVER_RETRY_S", ())
    settings = Settings(data_dir=tmp_path, chroma_host="127.0.0.1", chroma_port=chroma.port)
    unavailable: list[str] = []

    def turn_reads(reader: VectorStore, user_id: int, query: list[np.ndarray]) -> list[list]:
        reads = VectorReads(reader, user_id)
        hits = reads.nearest("topics", query, 5)
        if reads.unavailable is not None:
            unavailable.append(reads.unavailable)
        return hits

    race = race_new_collections(settings, turn_reads)
    assert not race.failures, f"{len(race.failures)} failed, first: {race.failures[0]!r}"
    assert unavailable, "some reads failed on the server"
    assert all("Nothing found on disk" in reason for reason in unavailable), unavailable[:3]
    assert len(race.answers) > len(unavailable), "the other reads found their vectors"


def test_a_collection_replaced_by_another_process_is_opened_again(
    tmp_path: Path, chroma: ChromaServer
) -> None:
    """`topica reindex` in one process drops a user's collections and fills new ones
    while a bot replica in another keeps the old ones' handles: every call through a
    stale handle failed ("Collection [...] does not exist") until the replica was
    restarted. The replica now opens the new collection and goes on."""
    settings = Settings(data_dir=tmp_path, chroma_host="127.0.0.1", chroma_port=chroma.port)
    reindexing = VectorStore(lambda: build_chroma_client(settings), "shared")
    replica = VectorStore(lambda: build_chroma_client(settings), "shared")
    vectors = np.random.default_rng(3).standard_normal((4, 512))
    reindexing.upsert("topics", 1, [1, 2, 3], vectors[:3])
    assert replica.nearest("topics", 1, [vectors[0]], 1)[0][0][0] == 1

    reindexing.drop("topics", 1)
    reindexing.upsert("topics", 1, [4], vectors[3:])

    assert [hit[0] for hit in replica.nearest("topics", 1, [vectors[3]], 5)[0]] == [4]
    assert replica.count("topics", 1) == 1
    replica.upsert("topics", 1, [5], vectors[:1])
    replica.delete("topics", 1, [4])
    assert replica.ids("topics", 1) == reindexing.ids("topics", 1) == {5}


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
