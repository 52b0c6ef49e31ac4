"""A memory-graph run killed at any node boundary resumes from its last step.

The run is started in a subprocess that SIGKILLs itself right after a node's
checkpoint; the test then resumes on the same data directory (on PostgreSQL: from
another replica's) and checks that
no message was lost, none is in two topics, and the result matches an
uninterrupted run.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from app.memory import archive_user, memory_thread
from core.settings import Settings
from graphs.memory import build_memory_graph
from stores.checkpoints import durable_checkpointer
from stores.saved_sessions import read_session
from stores.services import build_deps
from tests.support.chroma_server import ChromaServer
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION

NEXT_NODE = {
    "load_chunk": ("split",),
    "split": ("segment",),
    "segment": ("validate",),
    "validate": ("embed",),
    "embed": ("save",),
    "save": ("merge",),
    "merge": ("merge_by_rule",),
    "merge_by_rule": ("extract_facts",),
    "extract_facts": ("defer_facts",),
    "defer_facts": (),
}


def membership(data_dir: Path) -> tuple[list[tuple[str, ...]], int]:
    deps = build_deps(Settings(data_dir=data_dir))
    try:
        messages = deps.store.messages.all_of(1)
        by_topic: dict[int, list[str]] = {}
        for message in messages:
            assert message["topic_id"] is not None, f"{message['external_id']} not archived"
            by_topic.setdefault(message["topic_id"], []).append(message["external_id"])
        assert deps.vectors.count("topics", 1) == len(deps.store.topics.all_of(1))
        return sorted(tuple(ids) for ids in by_topic.values()), len(messages)
    finally:
        deps.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    data_dir = tmp_path_factory.mktemp("reference")

    async def run() -> None:
        deps = build_deps(Settings(data_dir=data_dir))
        deps.indexer.store_messages(1, read_session(SESSION))
        await archive_user(deps, 1, archive_all=True)
        deps.close()

    asyncio.run(run())
    topics, count = membership(data_dir)
    assert count == len(read_session(SESSION))
    return topics


@pytest.mark.timeout(90)
@pytest.mark.parametrize("node", list(NEXT_NODE))
async def test_killed_run_resumes_without_loss_or_doubles(
    node: str,
    tmp_path: Path,
    reference: list[tuple[str, ...]],
    store_engine: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On PostgreSQL the run resumes in another replica: another data directory, the same
    database, checkpoints and Chroma server."""
    resume_dir = tmp_path
    if store_engine == "postgres":
        resume_dir = tmp_path / "another-replica"
        chroma = ChromaServer(tmp_path / "chroma-server")
        chroma.start()
        request.addfinalizer(chroma.stop)
        monkeypatch.setenv("TOPICA_CHROMA_HOST", "127.0.0.1")
        monkeypatch.setenv("TOPICA_CHROMA_PORT", str(chroma.port))
    crashed = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.support.crash_memory_run", str(tmp_path), str(SESSION), node],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert crashed.returncode == -9, crashed.stderr[-2000:]

    deps = build_deps(Settings(data_dir=resume_dir))
    async with durable_checkpointer(deps.settings) as checkpointer:
        # The checkpoint holds the killed run, waiting at the node after the one that finished.
        snapshot = (
            await build_memory_graph(deps)
            .compile(checkpointer=checkpointer)
            .aget_state(memory_thread(1))
        )
        assert snapshot.next == NEXT_NODE[node]
        assert snapshot.values["chunk"], "the killed run had taken a chunk"
        await archive_user(deps, 1, archive_all=True, checkpointer=checkpointer)
        # A second pass finds nothing left to do.
        assert await archive_user(deps, 1, archive_all=True, checkpointer=checkpointer) == []
    deps.close()

    topics, count = membership(resume_dir)
    assert count == len(read_session(SESSION))
    assert Counter(ext for ids in topics for ext in ids) == Counter(
        ext for ids in reference for ext in ids
    )
    assert topics == reference
