"""ChromaDB collections of topic, fact, person and message vectors.

Vectors are computed by Topica's own embedder and handed to Chroma; Chroma's
default embedding function (which downloads a model) is never used. Every
record carries its `user_id` in metadata and every read filters on it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import chromadb
import httpx
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings

from graphs.settings import Settings

Kind = Literal["topics", "facts", "people", "messages"]
KINDS: tuple[Kind, ...] = ("topics", "facts", "people", "messages")


def build_chroma_client(settings: Settings) -> ClientAPI:
    """A Chroma server when `TOPICA_CHROMA_HOST` is set, else a persistent local one."""
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_host:
        return chromadb.HttpClient(
            host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
        )
    settings.chroma_path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.chroma_path), settings=chroma_settings)


class VectorStoreUnavailable(ConnectionError):
    """The vector store cannot be reached (a Chroma server that is down, say)."""


class VectorStore:
    """Per-user similarity search over Topica's records.

    Collections are named after the embedder, so switching embedding models
    never mixes vectors of different spaces in one index. The client is
    created on first use: with a Chroma server down, everything that needs
    only SQLite (storing incoming messages first of all) still works.
    """

    def __init__(self, connect: Callable[[], ClientAPI], embedder_name: str) -> None:
        self._connect = connect
        self._client: ClientAPI | None = None
        self._namespace = re.sub(r"[^a-zA-Z0-9]+", "-", embedder_name).strip("-").lower()
        self._collections: dict[Kind, Collection] = {}
        self._lock = threading.Lock()

    def _collection(self, kind: Kind) -> Collection:
        with self._lock:
            if kind not in self._collections:
                try:
                    if self._client is None:
                        self._client = self._connect()
                    self._collections[kind] = self._client.get_or_create_collection(
                        f"{kind}-{self._namespace}",
                        embedding_function=None,
                        configuration={"hnsw": {"space": "cosine"}},
                    )
                except Exception as error:
                    self._client = None
                    raise VectorStoreUnavailable(f"vector store unavailable: {error}") from error
            return self._collections[kind]

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turn a lost connection into VectorStoreUnavailable and reconnect next time."""
        try:
            yield
        except (httpx.HTTPError, OSError) as error:
            with self._lock:
                self._client = None
                self._collections.clear()
            raise VectorStoreUnavailable(f"vector store unavailable: {error}") from error

    def upsert(
        self,
        kind: Kind,
        user_id: int,
        ids: Sequence[int],
        vectors: np.ndarray,
        metadatas: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        if not ids:
            return
        extra = metadatas or [{} for _ in ids]
        with self._reachable():
            self._collection(kind).upsert(
                ids=[str(record_id) for record_id in ids],
                embeddings=np.asarray(vectors, dtype=np.float32),
                metadatas=[{**meta, "user_id": user_id} for meta in extra],
            )

    def _owned(
        self, kind: Kind, user_id: int, ids: Sequence[int], embeddings: bool
    ) -> dict[str, Any]:
        """The records among `ids` that belong to the user: {chroma id: embedding or None}.

        Records are fetched by id and their `user_id` checked here rather than with a
        `where` filter: Chroma (1.x) evaluates `ids` together with `where` in time that
        grows with the ids times the collection (1,000 ids of a 30,000-record collection:
        20 s with the filter, 65 ms without), while a get by ids alone is an index lookup.
        """
        include: list[Any] = ["metadatas", "embeddings"] if embeddings else ["metadatas"]
        with self._reachable():
            found = self._collection(kind).get(
                ids=[str(record_id) for record_id in dict.fromkeys(ids)], include=include
            )
        vectors = found["embeddings"] if embeddings else [None] * len(found["ids"])
        return {
            record_id: vector
            for record_id, metadata, vector in zip(
                found["ids"], found["metadatas"], vectors, strict=True
            )
            if (metadata or {}).get("user_id") == user_id
        }

    def delete(self, kind: Kind, user_id: int, ids: Sequence[int]) -> None:
        """Delete the user's records among `ids` (other users' ids are left alone)."""
        if not ids:
            return
        owned = self._owned(kind, user_id, ids, embeddings=False)
        if owned:
            with self._reachable():
                self._collection(kind).delete(ids=list(owned))

    def query(
        self,
        kind: Kind,
        user_id: int,
        vector: np.ndarray,
        limit: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[int, float]]:
        """(record id, cosine similarity) of the user's nearest records, best first."""
        condition: dict[str, Any] = {"user_id": user_id}
        if where:
            condition = {"$and": [condition, *({key: value} for key, value in where.items())]}
        with self._reachable():
            result = self._collection(kind).query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=max(1, limit),
                where=condition,
                include=["distances"],
            )
        ids = result["ids"][0]
        distances = result["distances"][0]
        return [
            (int(record_id), 1.0 - float(distance))
            for record_id, distance in zip(ids, distances, strict=True)
        ]

    def vectors(self, kind: Kind, user_id: int, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The user's stored vectors among `ids` (missing and other users' ids are absent)."""
        if not ids:
            return {}
        owned = self._owned(kind, user_id, ids, embeddings=True)
        return {
            int(record_id): np.asarray(vector, dtype=np.float32)
            for record_id, vector in owned.items()
        }

    def count(self, kind: Kind, user_id: int) -> int:
        with self._reachable():
            found = self._collection(kind).get(where={"user_id": user_id}, include=[])
        return len(found["ids"])
