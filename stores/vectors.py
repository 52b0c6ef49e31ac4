"""ChromaDB collections of topic, fact, person and message vectors, one set per user.

Vectors are computed by Topica's own embedder and handed to Chroma; Chroma's
default embedding function (which downloads a model) is never used.

Each user's records of a kind live in their own collection
(`{kind}-{embedder}-u{user_id}`), so a query can only ever search that user's
vectors, and its cost does not grow with everyone else's (a metadata `where` on a
shared collection would cost time linear in the user's records). Every record still
carries its `user_id` in metadata, and reads drop any record whose `user_id` is not the
user's. `topica migrate` moves the records of the earlier shared collections over.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from core.errors import VectorStoreUnavailable
from core.ports import VECTOR_KINDS, VectorKind
from stores.chroma_clients import (
    ChromaWrites,
    detach_local_system,
    lost_connection,
    open_collection,
    records_with_vectors,
)
from stores.chroma_clients import build_chroma_client as build_chroma_client

if TYPE_CHECKING:  # chromadb (and numpy) load on the first connection, not with every command
    import numpy as np
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

MIGRATION_PAGE = 5000
"""Records copied per page when moving a shared collection to per-user ones."""

SERVER_RETRY_S = (0.05, 0.1, 0.2, 0.4)
"""The waits before a call a Chroma server failed is tried again.
A collection another process created a moment ago can fail a query with "Error creating
hnsw segment reader: Nothing found on disk" (`chroma run` only; never the embedded
store) for a short while after its creation; these waits outlast that window
(`tests/e2e/test_chroma_server.py` races new collections)."""

log = logging.getLogger(__name__)

T = TypeVar("T")


class VectorStore:
    """Per-user similarity search over Topica's records.

    Collections are named after the embedder, so switching embedding models
    never mixes vectors of different spaces in one index, and after the user, so
    no query can reach another user's vectors. The client is created on first
    use: with a Chroma server down, everything that needs only SQLite (storing
    incoming messages first of all) still works.

    On a local store `writes` (`stores.chroma_clients`) tells when another process wrote
    (`topica ingest` beside a bot): the store is opened again before the next call.
    """

    def __init__(
        self,
        connect: Callable[[], ClientAPI],
        embedder_name: str,
        writes: ChromaWrites | None = None,
    ) -> None:
        self._connect = connect
        self._writes = writes
        self._client: ClientAPI | None = None
        self._namespace = re.sub(r"[^a-zA-Z0-9]+", "-", embedder_name).strip("-").lower()
        self._collections: dict[tuple[VectorKind, int], Collection] = {}
        self._lock = threading.Lock()

    def heartbeat(self) -> None:
        """Raises `VectorStoreUnavailable` unless Chroma answers (for health checks)."""
        with self._lock:
            try:
                self._connected().heartbeat()
            except Exception as error:
                self._client = None
                self._collections.clear()
                raise VectorStoreUnavailable(f"vector store unavailable: {error}") from error

    def _connected(self) -> ClientAPI:
        """The client, connected now if it is not (call with `_lock` held)."""
        if self._client is None:
            if self._writes is not None:
                self._writes.opening()
            self._client = self._connect()
        return self._client

    def release(self) -> None:
        """Drop the client (a local one's Chroma system too): the next reads from disk."""
        with self._lock:
            if self._client is not None and self._writes is not None:
                detach_local_system(self._client)
            self._client = None
            self._collections.clear()

    def _reopen_after_other_writers(self) -> None:
        """Open the local store again if another process wrote to it since it was read."""
        if self._writes is None or not self._writes.others_wrote():
            return
        log.info("another process wrote to the vector store: opening it again")
        self.release()

    def _wrote(self) -> None:
        if self._writes is not None:
            self._writes.wrote()

    def collection_name(self, kind: VectorKind, user_id: int) -> str:
        return f"{kind}-{self._namespace}-u{int(user_id)}"

    def _open(self, name: str) -> Collection:
        assert self._client is not None
        return open_collection(self._client, name)

    def _collection(self, kind: VectorKind, user_id: int) -> Collection:
        key = (kind, int(user_id))
        with self._lock:
            if key not in self._collections:
                try:
                    self._connected()
                    self._collections[key] = self._open(self.collection_name(kind, user_id))
                except Exception as error:
                    self._client = None
                    self._collections.clear()
                    raise VectorStoreUnavailable(f"vector store unavailable: {error}") from error
            return self._collections[key]

    def move_shared_collections(self) -> int:
        """Copy the records of an earlier shared `{kind}-{embedder}` collection into the
        per-user collections, then drop it (`topica migrate`); the records moved. Upserts
        are idempotent and the shared collection goes last, so an interrupted move is
        simply done again."""
        with self._reachable(), self._lock:
            self._connected()
            moved = self._move_shared_collections()
        self._wrote()
        return moved

    def _move_shared_collections(self) -> int:
        import numpy as np
        from chromadb.errors import NotFoundError

        assert self._client is not None
        moved = 0
        for kind in VECTOR_KINDS:
            shared = f"{kind}-{self._namespace}"
            try:
                source = self._client.get_collection(shared)
            except NotFoundError:
                continue
            offset = 0
            while True:
                page = source.get(
                    include=["embeddings", "metadatas"], limit=MIGRATION_PAGE, offset=offset
                )
                if not page["ids"]:
                    break
                by_user: dict[int, list[int]] = {}
                for index, metadata in enumerate(page["metadatas"]):
                    by_user.setdefault(int(metadata["user_id"]), []).append(index)
                for user_id, rows in by_user.items():
                    self._open(self.collection_name(kind, user_id)).upsert(
                        ids=[page["ids"][i] for i in rows],
                        embeddings=np.asarray([page["embeddings"][i] for i in rows]),
                        metadatas=[page["metadatas"][i] for i in rows],
                    )
                offset += len(page["ids"])
            moved += offset
            self._client.delete_collection(shared)
        return moved

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turn a lost connection into VectorStoreUnavailable and reconnect next time."""
        try:
            yield
        except Exception as error:
            if not lost_connection(error):
                raise
            with self._lock:
                self._client = None
                self._collections.clear()
            raise VectorStoreUnavailable(f"vector store unavailable: {error}") from error

    def _use(self, kind: VectorKind, user_id: int, call: Callable[[Collection], T]) -> T:
        """`call` on the user's collection of `kind`, riding out what other processes on
        the same store can cause between two calls:
        - the collection was dropped and made again (`topica reindex`): the handle kept
          here names one that no longer exists (`NotFoundError`), so it is opened again,
          once;
        - a call in a collection's first moments failed on the server (`InternalError`):
          tried again after each of `SERVER_RETRY_S` (every call here is a read or an
          idempotent write); one that still fails raises `VectorStoreUnavailable`, so a
          turn goes on with full-text search."""
        from chromadb.errors import InternalError, NotFoundError

        waits = iter(SERVER_RETRY_S)
        reopened = False
        self._reopen_after_other_writers()
        while True:
            try:
                with self._reachable():
                    return call(self._collection(kind, user_id))
            except NotFoundError:
                if reopened:
                    raise
                reopened = True
                log.info("a %s collection was replaced elsewhere: opening it again", kind)
                with self._lock:
                    self._collections.pop((kind, int(user_id)), None)
            except InternalError as error:
                wait = next(waits, None)
                if wait is None:
                    raise VectorStoreUnavailable(f"vector store failed: {error}") from error
                log.info("%s call failed, trying again in %.2f s: %s", kind, wait, error)
                time.sleep(wait)

    def upsert(
        self,
        kind: VectorKind,
        user_id: int,
        ids: Sequence[int],
        vectors: np.ndarray,
        metadatas: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        import numpy as np

        if not ids:
            return
        extra = metadatas or [{} for _ in ids]
        self._use(
            kind,
            user_id,
            lambda collection: collection.upsert(
                ids=[str(record_id) for record_id in ids],
                embeddings=np.asarray(vectors, dtype=np.float32),
                metadatas=[{**meta, "user_id": user_id} for meta in extra],
            ),
        )
        self._wrote()

    def _owned(
        self, kind: VectorKind, user_id: int, ids: Sequence[int], embeddings: bool
    ) -> dict[str, Any]:
        """The records among `ids` that belong to the user: {chroma id: embedding or None}.

        Fetched from the user's collection by id alone (an index lookup; `ids` with a
        `where` costs time that grows with ids times records), then checked against
        their `user_id` metadata. With `embeddings`, a record whose vector Chroma does not
        give yet is left out (`records_with_vectors`).
        """
        wanted = [str(record_id) for record_id in dict.fromkeys(ids)]
        if embeddings:
            records = self._use(kind, user_id, lambda c: records_with_vectors(c, wanted))
        else:
            found = self._use(kind, user_id, lambda c: c.get(ids=wanted, include=["metadatas"]))
            records = [(i, m, None) for i, m in zip(found["ids"], found["metadatas"], strict=True)]
        return {
            record_id: vector
            for record_id, metadata, vector in records
            if (metadata or {}).get("user_id") == user_id
        }

    def delete(self, kind: VectorKind, user_id: int, ids: Sequence[int]) -> None:
        """Delete the user's records among `ids` (other users' ids are left alone)."""
        if not ids:
            return
        owned = self._owned(kind, user_id, ids, embeddings=False)
        if owned:
            self._use(kind, user_id, lambda collection: collection.delete(ids=list(owned)))
            self._wrote()

    def query(
        self,
        kind: VectorKind,
        user_id: int,
        vector: np.ndarray,
        limit: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[int, float]]:
        """(record id, cosine similarity) of the user's nearest records, best first.

        `where` narrows the search by other metadata (e.g. `{"segment": 3}`).
        """
        import numpy as np

        condition: dict[str, Any] | None = None
        if where and len(where) == 1:
            condition = dict(where)
        elif where:
            condition = {"$and": [{key: value} for key, value in where.items()]}
        result = self._use(
            kind,
            user_id,
            lambda collection: collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=max(1, limit),
                where=condition,
                include=["distances", "metadatas"],
            ),
        )
        return [
            (int(record_id), 1.0 - float(distance))
            for record_id, distance, metadata in zip(
                result["ids"][0], result["distances"][0], result["metadatas"][0], strict=True
            )
            if (metadata or {}).get("user_id") == user_id
        ]

    def nearest(
        self, kind: VectorKind, user_id: int, vectors: Sequence[np.ndarray], limit: int
    ) -> list[list[tuple[int, float]]]:
        """(record id, cosine similarity) nearest to each of `vectors`, best first, in one
        round trip to the user's collection.

        The hot path of a turn's search: it reads distances only, not the metadata that
        `query` checks each hit's `user_id` against (a third of a query's time). The ids
        are candidates, not records: callers read the records through the user's own
        relational rows (`Database.by_ids` filters by `user_id`), which is where a record
        filed under the wrong user is dropped.
        """
        import numpy as np

        if not vectors:
            return []
        result = self._use(
            kind,
            user_id,
            lambda collection: collection.query(
                query_embeddings=np.asarray(vectors, dtype=np.float32),
                n_results=max(1, limit),
                include=["distances"],
            ),
        )
        return [
            [
                (int(record_id), 1.0 - float(distance))
                for record_id, distance in zip(ids, distances, strict=True)
            ]
            for ids, distances in zip(result["ids"], result["distances"], strict=True)
        ]

    def vectors(self, kind: VectorKind, user_id: int, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The user's stored vectors among `ids` (missing and other users' ids are absent)."""
        import numpy as np

        if not ids:
            return {}
        owned = self._owned(kind, user_id, ids, embeddings=True)
        return {
            int(record_id): np.asarray(vector, dtype=np.float32)
            for record_id, vector in owned.items()
        }

    def ids(self, kind: VectorKind, user_id: int) -> set[int]:
        """Every record id the user's collection of `kind` holds (theirs by metadata)."""
        found: set[int] = set()
        offset = 0
        while True:
            page = self._use(
                kind,
                user_id,
                lambda collection, offset=offset: collection.get(
                    include=["metadatas"], limit=MIGRATION_PAGE, offset=offset
                ),
            )
            if not page["ids"]:
                return found
            found.update(
                int(record_id)
                for record_id, metadata in zip(page["ids"], page["metadatas"], strict=True)
                if (metadata or {}).get("user_id") == user_id
            )
            offset += len(page["ids"])

    def count(self, kind: VectorKind, user_id: int) -> int:
        return self._use(kind, user_id, lambda collection: collection.count())

    def drop(self, kind: VectorKind, user_id: int) -> None:
        """Delete the user's collection of this kind (for this embedder); the next use
        creates it empty."""
        with self._reachable():
            self._collection(kind, user_id)  # connected, and the collection exists
            with self._lock:
                self._collections.pop((kind, int(user_id)), None)
                assert self._client is not None
                self._client.delete_collection(self.collection_name(kind, user_id))
        self._wrote()
