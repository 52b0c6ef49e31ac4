"""Running the memory graph for a user, chunk by chunk, until nothing is ready.

Shared by the command line, the bot's background worker and the evaluation
harness, so all three archive exactly the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from app.views import topic_view
from core.context import MemoryContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.progress import ProgressBoard, ProgressTask
from core.records import MEMORY_KIND, NewMessage
from core.state import MemoryState
from core.tracing import run_config, traced, user_key
from graphs.memory import build_memory_graph

log = logging.getLogger(__name__)


def memory_thread(user_id: int) -> RunnableConfig:
    """The user's memory thread: one per user, so an interrupted run is found and resumed."""
    return run_config("memory", user_id)


class ArchiveOptions(TypedDict, total=False):
    """How a memory run archives: `archive_all` every unarchived message now (not only
    chunks quiet for `chunk_interval`), `checkpointer` to resume an interrupted run,
    `now_ts` the clock for staleness (None: the wall clock), `progress` a board counting
    the messages archived against those waiting."""

    archive_all: bool
    checkpointer: BaseCheckpointSaver | None
    now_ts: float | None
    progress: ProgressBoard | None


@traced("archive")
async def archive_user(
    deps: Deps, user_id: int, **options: Unpack[ArchiveOptions]
) -> list[MemoryState]:
    """Run the memory graph until no chunk of this user is ready; one result per chunk.

    With a checkpointer, a run interrupted earlier on this user's thread is
    resumed from its last completed step before new chunks are taken. Each
    step's checkpoint is written before the next step starts (durability
    "sync"): a memory run is a handful of steps, and losing one costs more.
    With a progress board, the messages archived are counted against those waiting.
    One memory run per user at a time: a run of another process (an ingest, the bot's
    worker) on the same data is waited for, so two never merge the same topics at once.
    """
    async with deps.run_lock.hold(user_id):
        return await _archive(deps, user_id, options)


async def _archive(deps: Deps, user_id: int, options: ArchiveOptions) -> list[MemoryState]:
    checkpointer, progress = options.get("checkpointer"), options.get("progress")
    graph = build_memory_graph(deps).compile(checkpointer=checkpointer, name="memory")
    context = MemoryContext.from_settings(
        deps.settings,
        user_id=user_id,
        archive_all=options.get("archive_all", False),
        now_ts=options.get("now_ts"),
    )
    config = memory_thread(user_id)
    results: list[MemoryState] = []
    archiving = None
    if progress is not None:
        waiting = await asyncio.to_thread(deps.store.messages.unarchived_count, user_id)
        archiving = progress.task("archiving", total=waiting, unit="messages")

    def finished(state: MemoryState) -> None:
        results.append(state)
        if archiving is not None:
            topics = sum(len(result.get("saved_topic_ids", [])) for result in results)
            archiving.update(description=f"archiving: {len(results)} chunks → {topics} topics")
            archiving.advance(len(state["chunk"]))

    await asyncio.to_thread(deps.indexer.index_all, user_id)
    if checkpointer is not None:
        snapshot = await graph.aget_state(config)
        if snapshot.next:
            state = await graph.ainvoke(None, config, context=context, durability="sync")
            if state.get("chunk"):
                finished(state)
    while True:
        state = await graph.ainvoke(
            {}, config, context=context, durability="sync" if checkpointer else None
        )
        if not state.get("chunk"):
            # That run may still have extracted facts of older topics (a batch of them);
            # while it did, more may wait: a chunk can make more topics than one batch.
            if state.get("facts_pending") and state["facts"]["status"] == "done":
                continue
            break
        finished(state)
    # Whatever a node stored but could not index (a vector store that blinked) is indexed
    # now; if the store is still down, the pending list waits for the next run.
    try:
        await asyncio.to_thread(deps.indexer.index_all, user_id)
    except VectorStoreUnavailable as error:
        log.warning("memory run for user %s: indexing postponed: %s", user_key(user_id), error)
    if archiving is not None:
        archiving.finish()
    return results


@dataclass
class StoringProgress:
    """`ingest`'s first task, counted in messages: those stored before (nothing to do)
    at once, the new ones as the indexer takes each batch of them off its queue; the
    description says how many were new, and "stored and indexed" once all are done."""

    task: ProgressTask | None
    total: int
    new: int
    left: int = field(init=False)

    def __post_init__(self) -> None:
        self.left = self.new
        self._advance(0, already_stored=self.total - self.new)

    def indexed(self, count: int) -> None:
        """`count` queued messages indexed (the queue may hold older ones too)."""
        self._advance(min(count, self.left))

    def done(self) -> None:
        if self.left:
            self._advance(self.left)

    def _advance(self, indexed: int, already_stored: int = 0) -> None:
        self.left -= indexed
        if self.task is None:
            return
        doing = "stored and indexed" if not self.left else "storing and indexing"
        self.task.update(description=f"{doing} ({self.new} new)", advance=indexed + already_stored)


@traced("ingest")
async def ingest(
    deps: Deps,
    messages: Sequence[NewMessage],
    user_id: int,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    progress: ProgressBoard | None = None,
) -> dict[str, Any]:
    """Store a saved session's messages, archive everything, and report what became of
    them (`topica ingest --json`): topics in file order, merges, facts, fallbacks."""
    storing = progress.task("storing and indexing", len(messages), "messages") if progress else None
    # Stored first, whatever else runs; indexed and archived once no other memory run of
    # this user (another ingest, the bot's worker) is going on.
    new_count = len(await asyncio.to_thread(deps.store.messages.add, user_id, list(messages)))
    counter = StoringProgress(storing, len(messages), new_count)
    async with deps.run_lock.hold(user_id):
        await asyncio.to_thread(deps.indexer.index, user_id, "messages", on_batch=counter.indexed)
        counter.done()
        everything = ArchiveOptions(archive_all=True, checkpointer=checkpointer, progress=progress)
        chunks = await _archive(deps, user_id, everything)
    file_ids = [message["external_id"] for message in messages]
    return await asyncio.to_thread(archive_report, deps, user_id, file_ids, new_count, chunks)


@traced("archive_command")
async def archive(deps: Deps, user_id: int, **options: Unpack[ArchiveOptions]) -> dict[str, Any]:
    """Run the memory graph over the user's unarchived conversation (`archive_all`: the
    live tail too, not only chunks quiet for `chunk_interval`) and report it as `ingest`
    does, for the messages that were waiting, plus `waiting`: those still left for later."""
    waiting = await asyncio.to_thread(deps.store.messages.unarchived, user_id)
    chunks = await archive_user(deps, user_id, **options)
    ids = [row["external_id"] for row in waiting]
    report = await asyncio.to_thread(archive_report, deps, user_id, ids, 0, chunks)
    # What no ready chunk took is waiting (the live tail), not uncovered.
    taken = {row["external_id"] for state in chunks for row in state["chunk"]}
    left = set(report["uncovered"])
    report["uncovered"] = [i for i in ids if i in left and i in taken]
    report["waiting"] = [i for i in ids if i in left and i not in taken]
    return report


def archive_report(
    deps: Deps,
    user_id: int,
    file_ids: Sequence[str],
    new_messages: int,
    chunks: Sequence[MemoryState],
) -> dict[str, Any]:
    """What became of the messages `file_ids` (external ids): `ingest --json`'s shape."""
    stored = {row["external_id"]: row for row in deps.store.messages.all_of(user_id)}
    topic_ids = list(
        dict.fromkeys(stored[i]["topic_id"] for i in file_ids if stored[i]["topic_id"] is not None)
    )
    topics = sorted(deps.store.topics.by_ids(user_id, topic_ids), key=lambda t: t["start_msg_id"])
    fallbacks = sorted({state["split_fallback"] for state in chunks if state.get("split_fallback")})
    facts_reports = [state["facts"] for state in chunks if "facts" in state]
    return {
        "user_id": user_id,
        "messages": len(file_ids),
        "new_messages": new_messages,
        "chunks": len(chunks),
        "topics": topic_view(deps, user_id, topics),
        "uncovered": [
            i
            for i in file_ids
            if stored[i]["topic_id"] is None and stored[i]["kind"] == MEMORY_KIND
        ],
        "merges": [merge for state in chunks for merge in state.get("merges", [])],
        "facts": deps.store.facts.all_of(user_id),
        "facts_status": facts_reports[-1]["status"] if facts_reports else None,
        "facts_reason": facts_reports[-1]["reason"] if facts_reports else None,
        "split_fallbacks": fallbacks,
        "llm": deps.models.name("splitter"),
    }
