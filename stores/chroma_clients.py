"""Chroma clients: building one, and seeing other processes' writes to a local store.

An embedded Chroma (`PersistentClient`) keeps each collection's vector index in the
memory of the process that opened it; writes by another process on the same directory
(`topica ingest` beside a running bot) reach the files, not that memory, so its queries
keep searching the index as it was. Every write through a `VectorStore` appends one line
naming its process (and store) to `topica-writes.log` in the store's directory (appends
are atomic); a store that finds lines of another since it last looked opens Chroma again.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.settings import Settings

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

log = logging.getLogger(__name__)

LOG_NAME = "topica-writes.log"

SEARCH_EF = 400
"""How wide hnswlib searches every collection (`ef_search`): twice the deepest list a turn
reads (`excerpt_vector_depth`, 200). Chroma persists a collection's graph only past its
`sync_threshold` (1,000 records) and builds a smaller one again on every open, not the
same graph each time; searched only as wide as the list is deep (hnswlib's least), the
tail of a 200-deep list then differed between two processes on the same memory, and so
did the context a question got after a restart. Twice as wide, the list is the exact
nearest records in practice (`tests/integration/test_stores_deep_queries.py`)."""


def collection_configuration() -> dict[str, Any]:
    """What every collection is made with: cosine distance, searched `SEARCH_EF` wide."""
    return {"hnsw": {"space": "cosine", "ef_search": SEARCH_EF}}


def open_collection(client: ClientAPI, name: str) -> Collection:
    """The collection `name`, made if missing (`collection_configuration`); one made
    before searched narrower is widened to `SEARCH_EF` (a setting Chroma lets change).
    Widening writes to the store, which another process writing to it (`topica ingest`
    beside a running bot) may hold locked: then the collection is searched as it is, and
    a later open widens it."""
    from chromadb.errors import ChromaError, NotFoundError

    try:  # a read: Chroma waits for a writer's lock to make one, not to find one
        collection = client.get_collection(name, embedding_function=None)
    except NotFoundError:
        collection = client.get_or_create_collection(
            name, embedding_function=None, configuration=collection_configuration()
        )
    hnsw = (collection.configuration or {}).get("hnsw") or {}
    if hnsw.get("ef_search", 0) < SEARCH_EF:
        try:
            collection.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
        except ChromaError as error:
            log.info("%s: not widened this time (%s)", name, error)
    return collection


_instances = itertools.count()
"""Each `ChromaWrites` names its lines apart: two stores of one process on the same
directory may hold different Chroma systems once one of them has opened it again."""


def build_chroma_client(settings: Settings) -> ClientAPI:
    """A Chroma server when `TOPICA_CHROMA_HOST` is set, else a persistent local one."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_host:
        return chromadb.HttpClient(
            host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
        )
    settings.chroma_path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.chroma_path), settings=chroma_settings)


def detach_local_system(client: ClientAPI) -> None:
    """Make the next `PersistentClient` on the client's directory start a system of its
    own, reading the store from disk again, while this client (and any call still running
    on it) keeps working on the old one until it is dropped. chromadb shares one system
    per directory in a process, and closing it under a running call would break that call."""
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient._identifier_to_system.pop(getattr(client, "_identifier", ""), None)


def lost_connection(error: BaseException) -> bool:
    """An OS-level or HTTP transport error (httpx is loaded only when a Chroma server is
    used, so an error can only be one of its own once it is)."""
    httpx = sys.modules.get("httpx")
    return isinstance(error, OSError) or (httpx is not None and isinstance(error, httpx.HTTPError))


class ChromaWrites:
    """One store's view of the writes to a local Chroma directory."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOG_NAME
        self._mark = f"{os.getpid()}.{next(_instances)}\n".encode()
        self._seen = 0
        self._lock = threading.Lock()

    def wrote(self) -> None:
        """Record a write of this store (after it is on disk)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, self._mark)
        finally:
            os.close(descriptor)

    def opening(self) -> None:
        """The store is being opened: every write logged so far is on disk and read."""
        with self._lock:
            self._seen = self._size()

    def others_wrote(self) -> bool:
        """Whether another store (another process's, mostly) wrote since this one was
        opened or last asked."""
        with self._lock:
            size = self._size()
            if size <= self._seen:
                return False
            with self.path.open("rb") as log:
                log.seek(self._seen)
                new = log.read(size - self._seen)
            self._seen = size
            return any(line + b"\n" != self._mark for line in new.splitlines())

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0


def records_with_vectors(collection: Collection, ids: Sequence[str]) -> list[tuple[str, Any, Any]]:
    """(id, metadata, embedding) of the records among `ids` that have both.

    Chroma's `get` reads the ids and metadata from its metadata segment and the
    embeddings from its vector segment, and keeps only the embeddings found: while the
    vector segment has yet to take in a record another writer just added (a replica
    beside this one), the embeddings are fewer than the ids and no longer line up with
    them. Then each id is read alone, and one still without its embedding is left out, as
    a record not yet indexed is."""
    found = collection.get(ids=list(ids), include=["metadatas", "embeddings"])
    embeddings = found["embeddings"]
    if embeddings is not None and len(embeddings) == len(found["ids"]):
        return list(zip(found["ids"], found["metadatas"], embeddings, strict=True))
    alone = [collection.get(ids=[i], include=["metadatas", "embeddings"]) for i in found["ids"]]
    return [
        (one["ids"][0], one["metadatas"][0], one["embeddings"][0])
        for one in alone
        if one["ids"] and one["embeddings"] is not None and len(one["embeddings"]) == 1
    ]
