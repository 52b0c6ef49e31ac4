"""The dependency container: the heavy services every node factory receives.

Stores, the vector index, the embedder, the indexer and chat models are built once per
process (`stores.services.build_deps`) and injected into node factories; they never travel in
graph state or in the run `Context`. Their types are the contracts in `core.ports`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from core.models import ModelRegistry
from core.ports import ChatTurnLock, Embedder, Indexer, MemoryRunLock, Store, VectorIndex
from core.settings import Settings
from core.stops import GenerationStops

SEARCH_THREADS = 4
"""A search's vector queries (one per kind) and its full-text query over topics run
beside its full-text query over messages (each thread reads through its own connection)."""


def search_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=SEARCH_THREADS, thread_name_prefix="topica-search")


@dataclass
class Deps:
    settings: Settings
    store: Store
    vectors: VectorIndex
    embedder: Embedder
    indexer: Indexer
    models: ModelRegistry
    run_lock: MemoryRunLock
    """One memory run per user at a time, across processes (`app.memory.archive_user`)."""
    chat_lock: ChatTurnLock | None = None
    """Across replicas (PostgreSQL): one chat's turns one at a time; None in one process."""
    stops: GenerationStops = field(default_factory=GenerationStops)
    """Turns whose answer the user can stop while it is written (the bot's stop button)."""
    search_threads: ThreadPoolExecutor = field(default_factory=search_pool)
    """The threads one search's lists are read on (`nodes.response.hits.find_hits`)."""

    def close(self) -> None:
        if self.chat_lock is not None:
            self.chat_lock.close()
        self.search_threads.shutdown(wait=False)
        self.store.close()
