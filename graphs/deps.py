"""Dependency wiring: the heavy services every node factory receives.

Stores, the vector index, the embedder and chat models are built once per
process and injected into node factories; they never travel in graph state
or in the run `Context`.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from graphs.models import ModelRegistry
from graphs.settings import Settings
from stores.embedders import Embedder, build_embedder
from stores.relational import RelationalStore
from stores.vectors import VectorStore, build_chroma_client


@dataclass
class Deps:
    settings: Settings
    store: RelationalStore
    vectors: VectorStore
    embedder: Embedder
    models: ModelRegistry

    def close(self) -> None:
        self.store.close()


def build_deps(
    settings: Settings,
    *,
    models: ModelRegistry | None = None,
    embedder: Embedder | None = None,
) -> Deps:
    embedder = embedder or build_embedder(settings)
    return Deps(
        settings=settings,
        store=RelationalStore(settings.sqlite_path, settings.sqlite_busy_timeout_s),
        vectors=VectorStore(lambda: build_chroma_client(settings), embedder.name),
        embedder=embedder,
        models=models or ModelRegistry(settings),
    )


_default: Deps | None = None


def default_deps() -> Deps:
    """The process's services built from the environment (for langgraph.json's graphs)."""
    global _default
    if _default is None:
        _default = build_deps(Settings())
    return _default


def durable_checkpointer(settings: Settings) -> AbstractAsyncContextManager[AsyncSqliteSaver]:
    """The SQLite checkpointer the CLI and the bot compile their graphs with.

    Runs are resumable from their last completed step after a crash;
    `langgraph dev` keeps its own and gets graphs compiled without one.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return AsyncSqliteSaver.from_conn_string(str(settings.checkpoints_path))
