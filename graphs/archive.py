"""Running the memory pipeline for a user: store messages first, then archive chunk by chunk.

Shared by the command line, the bot's background worker and the evaluation
harness, so all three archive exactly the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.memory import build_memory_graph
from graphs.state import MemoryState
from graphs.tracing import run_config, user_key
from nodes.indexing import index_records, reindex_pending
from stores.records import MessageRow, NewMessage
from stores.vectors import VectorStoreUnavailable

log = logging.getLogger(__name__)


async def store_messages(
    deps: Deps, user_id: int, messages: Sequence[NewMessage]
) -> list[MessageRow]:
    """Persist messages (all or nothing), then index them for message-level search.

    The relational write comes first and alone decides what is stored. Indexing
    covers every message still waiting for a vector, so a vector store that was
    down for earlier messages is caught up here; if it is down now, the
    messages stay stored and the error propagates.
    """
    rows = await asyncio.to_thread(deps.store.add_messages, user_id, list(messages))
    while pending := await asyncio.to_thread(deps.store.pending_vectors, user_id, "messages", 512):
        await index_records(deps, user_id, "messages", pending)
    return rows


def memory_thread(user_id: int) -> RunnableConfig:
    """The user's memory thread: one per user, so an interrupted run is found and resumed."""
    return run_config("memory", user_id)


async def archive_user(
    deps: Deps,
    user_id: int,
    *,
    archive_all: bool = False,
    checkpointer: BaseCheckpointSaver | None = None,
    now_ts: float | None = None,
    on_chunk: Callable[[MemoryState], None] | None = None,
) -> list[MemoryState]:
    """Run the memory graph until no chunk of this user is ready; one result per chunk.

    With a checkpointer, a run interrupted earlier on this user's thread is
    resumed from its last completed step before new chunks are taken. Each
    step's checkpoint is written before the next step starts (durability
    "sync"): a memory run is a handful of steps, and losing one costs more.
    """
    graph = build_memory_graph(deps).compile(checkpointer=checkpointer, name="memory")
    context = MemoryContext.from_settings(
        deps.settings, user_id=user_id, archive_all=archive_all, now_ts=now_ts
    )
    config = memory_thread(user_id)
    results: list[MemoryState] = []

    def finished(state: MemoryState) -> None:
        results.append(state)
        if on_chunk is not None:
            on_chunk(state)

    await reindex_pending(deps, user_id)
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
        await reindex_pending(deps, user_id)
    except VectorStoreUnavailable as error:
        log.warning("memory run for user %s: indexing postponed: %s", user_key(user_id), error)
    return results
