"""Building the process's services (`core.deps.Deps`) from its settings."""

from __future__ import annotations

from core.deps import Deps
from core.errors import StoreError
from core.models import ModelRegistry
from core.ports import Embedder
from core.settings import Settings
from stores.chroma_clients import ChromaWrites, build_chroma_client
from stores.embedders import build_embedder
from stores.indexing import Indexer
from stores.locks import AdvisoryChatLock, ClaimRunLock, FileRunLock
from stores.relational import RelationalStore
from stores.vectors import VectorStore


def build_relational_store(settings: Settings) -> RelationalStore:
    """SQLite in the data dir, or the PostgreSQL database `TOPICA_DATABASE_URL` names."""
    if settings.database_url is None:
        return RelationalStore(settings.sqlite_path, settings.sqlite_busy_timeout_s)
    try:
        from stores.relational.postgres import PostgresDatabase
    except ImportError as error:  # the `postgres` extra is not installed
        raise StoreError(
            f"TOPICA_DATABASE_URL needs the PostgreSQL driver: pip install 'topica[postgres]' "
            f"({error})"
        ) from error
    database = PostgresDatabase(
        settings.database_url.get_secret_value(),
        schema=settings.database_schema,
        pool_size=settings.database_pool_size,
        timeout_s=settings.sqlite_busy_timeout_s,
    )
    return RelationalStore(database)


def build_deps(
    settings: Settings,
    *,
    models: ModelRegistry | None = None,
    embedder: Embedder | None = None,
) -> Deps:
    embedder = embedder or build_embedder(settings)
    store = build_relational_store(settings)
    writes = None if settings.chroma_host else ChromaWrites(settings.chroma_path)
    vectors = VectorStore(lambda: build_chroma_client(settings), embedder.name, writes)
    return Deps(
        settings=settings,
        store=store,
        vectors=vectors,
        embedder=embedder,
        indexer=Indexer(store, vectors, embedder),
        models=models or ModelRegistry(settings),
        run_lock=(
            FileRunLock(settings.data_dir / "locks")
            if settings.database_url is None
            else ClaimRunLock(store.db, settings.memory_claim_lease_s)
        ),
        chat_lock=None if settings.database_url is None else AdvisoryChatLock(store.db),
    )


_default: Deps | None = None


def default_deps() -> Deps:
    """The process's services built from the environment (for langgraph.json's graphs)."""
    global _default
    if _default is None:
        _default = build_deps(Settings())
    return _default
