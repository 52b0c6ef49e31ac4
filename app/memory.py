"""Running the memory graph for a user, chunk by chunk, until nothing is ready.

Shared by the command line, the bot's background worker and the evaluation
harness, so all three archive exactly the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from app.views import topic_view
from core.context import MemoryContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.progress import ProgressBoard
from core.records import MessageRow, NewMessage
from core.state import MemoryState
from core.tracing import run_config, traced, user_key
from graphs.memory import build_memory_graph

log = logging.getLogger(__name__)


def memory_thread(user_id: int) -> RunnableConfig:
    """The user's memory thread: one per user, so an interrupted run is found and resumed."""
    return run_config("memory", user_id)


@traced("archive")
async def archive_user(
    deps: Deps,
    user_id: int,
    *,
    archive_all: bool = False,
    checkpointer: BaseCheckpointSaver | None = None,
    now_ts: float | None = None,
    progress: ProgressBoard | None = None,
) -> list[MemoryState]:
    """Run the memory graph until no chunk of this user is ready; one result per chunk.

    With a checkpointer, a run interrupted earlier on this user's thread is
    resumed from its last completed step before new chunks are taken. Each
    step's checkpoint is written before the next step starts (durability
    "sync"): a memory run is a handful of steps, and losing one costs more.
    With a progress board, the messages archived are counted against those waiting.
    """
    graph = build_memory_graph(deps).compile(checkpointer=checkpointer, name="memory")
    context = MemoryContext.from_settings(
        deps.settings, user_id=user_id, archive_all=archive_all, now_ts=now_ts
    )
    config = memory_thread(user_id)
    results: list[MemoryState] = []
    archiving = None
    if progress is not None:
        waiting = await asyncio.to_thread(deps.store.messages.unarchived, user_id)
        archiving = progress.task("archiving", total=len(waiting), unit="messages")

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
            break  # that last run may still have extracted facts of older topics
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
    new_rows = await asyncio.to_thread(deps.indexer.store_messages, user_id, messages)
    if storing is not None:
        storing.update(description=f"stored and indexed ({len(new_rows)} new)")
        storing.advance(len(messages))
    chunks = await archive_user(
        deps, user_id, archive_all=True, checkpointer=checkpointer, progress=progress
    )
    return await asyncio.to_thread(ingest_report, deps, user_id, messages, new_rows, chunks)


def ingest_report(
    deps: Deps,
    user_id: int,
    messages: Sequence[NewMessage],
    new_rows: Sequence[MessageRow],
    chunks: Sequence[MemoryState],
) -> dict[str, Any]:
    file_ids = [message["external_id"] for message in messages]
    stored = {row["external_id"]: row for row in deps.store.messages.all_of(user_id)}
    topic_ids = list(
        dict.fromkeys(stored[i]["topic_id"] for i in file_ids if stored[i]["topic_id"] is not None)
    )
    topics = sorted(deps.store.topics.by_ids(user_id, topic_ids), key=lambda t: t["start_msg_id"])
    fallbacks = sorted({state["split_fallback"] for state in chunks if state.get("split_fallback")})
    facts_reports = [state["facts"] for state in chunks if "facts" in state]
    return {
        "user_id": user_id,
        "messages": len(messages),
        "new_messages": len(new_rows),
        "chunks": len(chunks),
        "topics": topic_view(deps, user_id, topics),
        "uncovered": [i for i in file_ids if stored[i]["topic_id"] is None],
        "merges": [merge for state in chunks for merge in state.get("merges", [])],
        "facts": deps.store.facts.all_of(user_id),
        "facts_status": facts_reports[-1]["status"] if facts_reports else None,
        "facts_reason": facts_reports[-1]["reason"] if facts_reports else None,
        "split_fallbacks": fallbacks,
        "llm": deps.models.name("splitter"),
    }
