"""Building the process's services (`core.deps.Deps`) from its settings."""

from __future__ import annotations

from core.deps import Deps
from core.models import ModelRegistry
from core.ports import Embedder
from core.settings import Settings
from stores.embedders import build_embedder
from stores.indexing import Indexer
from stores.locks import FileRunLock
from stores.relational import RelationalStore
from stores.vectors import VectorStore, build_chroma_client


def build_deps(
    settings: Settings,
    *,
    models: ModelRegistry | None = None,
    embedder: Embedder | None = None,
) -> Deps:
    embedder = embedder or build_embedder(settings)
    store = RelationalStore(settings.sqlite_path, settings.sqlite_busy_timeout_s)
    vectors = VectorStore(lambda: build_chroma_client(settings), embedder.name)
    return Deps(
        settings=settings,
        store=store,
        vectors=vectors,
        embedder=embedder,
        indexer=Indexer(store, vectors, embedder),
        models=models or ModelRegistry(settings),
        run_lock=FileRunLock(settings.data_dir / "locks"),
    )


_default: Deps | None = None


def default_deps() -> Deps:
    """The process's services built from the environment (for langgraph.json's graphs)."""
    global _default
    if _default is None:
        _default = build_deps(Settings())
    return _default
