"""Durability with the SQLite checkpointer: repeated runs are idempotent, and a run
interrupted before `save` is resumed on the user's thread without duplicating anything."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from app.memory import archive_user, memory_thread
from core.context import MemoryContext
from core.deps import Deps
from graphs.memory import build_memory_graph
from tests.support.memory import memberships

TALK = [
    "Can you help me plan the Valencia trip in May?",
    "Sure: how many days, and do you want the beach or the old town?",
    "Five days, mostly the old town and one day in Albufera.",
    "Then stay in Ciutat Vella and take bus 25 to El Palmar for the paella.",
    "How do I upgrade Postgres 14 to 16 in Docker Compose without downtime?",
    "Use logical replication into a postgres:16 container, then switch over.",
    "Is pg_upgrade --link an option instead?",
    "Yes, if both binaries are in one image; take a snapshot of the volume first.",
]


CHUNK_SIZE = 6
"""Smaller than the talk (8 messages): two chunks, the first cut where its sitting ends."""


async def store_talk(deps: Deps, make_messages) -> list[int]:
    # Two sittings three hours apart: two chunks on the same thread.
    messages = make_messages(TALK, gaps={4: timedelta(hours=3)})
    return [row["id"] for row in deps.indexer.store_messages(1, messages)]


async def test_archiving_twice_with_a_checkpointer_is_idempotent(
    make_deps, make_messages, tmp_path: Path
):
    deps = make_deps(max_chunk_size=CHUNK_SIZE)
    ids = await store_talk(deps, make_messages)

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite3")) as saver:
        first = await archive_user(deps, 1, archive_all=True, checkpointer=saver)
        topics = memberships(deps, 1, key="id")
        second = await archive_user(deps, 1, archive_all=True, checkpointer=saver)
        snapshot = (
            await build_memory_graph(deps).compile(checkpointer=saver).aget_state(memory_thread(1))
        )

    assert [[m["id"] for m in state["chunk"]] for state in first] == [ids[:4], ids[4:]]
    assert second == []
    assert memberships(deps, 1, key="id") == topics
    assert sorted(i for _, members in topics for i in members) == ids
    assert snapshot.values["chunk"] == [] and snapshot.next == ()
    assert deps.vectors.count("topics", 1) == len(topics)


async def test_a_run_interrupted_before_save_is_resumed_without_duplicates(
    make_deps, make_messages, tmp_path: Path
):
    deps = make_deps(max_chunk_size=CHUNK_SIZE)
    ids = await store_talk(deps, make_messages)
    config = memory_thread(1)

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite3")) as saver:
        interrupted = build_memory_graph(deps).compile(
            checkpointer=saver, interrupt_before=["save"]
        )
        await interrupted.ainvoke(
            {"chunk": []},
            config,
            context=MemoryContext(user_id=1, archive_all=True, max_chunk_size=CHUNK_SIZE),
        )
        paused = await interrupted.aget_state(config)
        assert paused.next == ("save",)
        assert deps.store.topics.all_of(1) == []

        resumed = await archive_user(deps, 1, archive_all=True, checkpointer=saver)
        again = await archive_user(deps, 1, archive_all=True, checkpointer=saver)

    assert [[m["id"] for m in state["chunk"]] for state in resumed] == [ids[:4], ids[4:]]
    assert resumed[0]["drafts"] == paused.values["drafts"]
    assert again == []
    topics = memberships(deps, 1, key="id")
    covered = [i for _, members in topics for i in members]
    assert sorted(covered) == ids and len(covered) == len(set(covered))
    assert deps.vectors.count("topics", 1) == len(topics)
