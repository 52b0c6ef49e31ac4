"""The one path that keeps the vector index in step with the relational store.

Every write of a record that has a vector (a message, topic, fact or person) lists the
record in the store's vector queue in the same transaction, and so does every delete or
merge that removes one. `Indexer.index` drains a user's queue of one kind: records still
in the store are embedded (or take the vectors given) and upserted, records gone from it
are deleted from the index, then their queue entries are cleared. If the vector store is
down the entries stay, and the next `index`/`index_all` (run before every memory run)
catches up, so no record is left unsearchable and no deleted one stays findable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.ports import VECTOR_KINDS, Embedder, Store, VectorIndex, VectorKind
from core.records import MessageRow, NewMessage, TopicRow
from core.text import person_text, topic_embedding_text

BATCH = 256


def topic_metadata(topic: TopicRow) -> dict[str, Any]:
    return {
        "start_msg_id": topic["start_msg_id"],
        "end_msg_id": topic["end_msg_id"],
        "last_ts": topic["last_message_at"],
    }


class Indexer:
    def __init__(self, store: Store, vectors: VectorIndex, embedder: Embedder) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder

    def _records(
        self, user_id: int, kind: VectorKind, ids: Sequence[int]
    ) -> tuple[list[int], list[str], list[dict[str, Any]]]:
        """(ids still stored, texts to embed, metadata) of the user's records of one kind."""
        store = self.store
        if kind == "messages":
            rows = store.messages.by_ids(user_id, ids)
            metadata = [{"segment": r["segment"], "role": r["role"], "ts": r["ts"]} for r in rows]
            return [r["id"] for r in rows], [r["content"] for r in rows], metadata
        if kind == "topics":
            topics = store.topics.by_ids(user_id, ids)
            texts = [
                topic_embedding_text(
                    topic["summary"], store.messages.of_topic(user_id, topic["id"])
                )
                for topic in topics
            ]
            return [t["id"] for t in topics], texts, [topic_metadata(t) for t in topics]
        if kind == "facts":
            facts = store.facts.by_ids(user_id, ids)
            metadata = [{"type": f["type"], "importance": f["importance"]} for f in facts]
            return [f["id"] for f in facts], [f["content"] for f in facts], metadata
        people = store.people.by_ids(user_id, ids)
        return [p["id"] for p in people], [person_text(p) for p in people], [{} for _ in people]

    def _index_batch(
        self,
        user_id: int,
        kind: VectorKind,
        ids: Sequence[int],
        given: Mapping[int, Sequence[float]],
    ) -> int:
        found, texts, metadata = self._records(user_id, kind, ids)
        if found:
            missing = [i for i, record_id in enumerate(found) if record_id not in given]
            encoded = self.embedder.encode([texts[i] for i in missing]) if missing else None
            rows = {i: encoded[n] for n, i in enumerate(missing)} if encoded is not None else {}
            matrix = np.asarray(
                [rows[i] if i in rows else given[record_id] for i, record_id in enumerate(found)],
                dtype=np.float32,
            )
            self.vectors.upsert(kind, user_id, found, matrix, metadata)
        present = set(found)
        self.vectors.delete(kind, user_id, [i for i in ids if i not in present])
        self.store.vector_queue.clear(user_id, kind, list(ids))
        return len(found)

    def index(
        self,
        user_id: int,
        kind: VectorKind,
        vectors: Mapping[int, Sequence[float]] | None = None,
    ) -> int:
        """Index the user's queued records of `kind`; returns how many were upserted.

        `vectors` are precomputed vectors by record id (a topic embedded by the memory
        graph); other records are embedded here. Raises `VectorStoreUnavailable` when
        the vector store is down; the queue then keeps what is left.
        """
        total = 0
        while pending := self.store.vector_queue.pending(user_id, kind, BATCH):
            total += self._index_batch(user_id, kind, pending, vectors or {})
        return total

    def index_all(self, user_id: int) -> dict[str, int]:
        """Index everything of this user still queued; counts of upserts per kind."""
        counts = {kind: self.index(user_id, kind) for kind in VECTOR_KINDS}
        return {kind: count for kind, count in counts.items() if count}

    def store_messages(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages (all or nothing), then index them for message-level search.

        The relational write comes first and alone decides what is stored. Indexing
        covers every message still queued, so a vector store that was down for earlier
        messages is caught up here; if it is down now, the messages stay stored and
        `VectorStoreUnavailable` propagates.
        """
        rows = self.store.messages.add(user_id, list(messages))
        self.index(user_id, "messages")
        return rows
