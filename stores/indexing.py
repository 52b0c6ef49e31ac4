"""The one path that keeps the vector index in step with the relational store.

Every write of a record that has a vector (a message, topic, fact or person) lists the
record in the store's vector queue in the same transaction, and so does every delete or
merge that removes one. `Indexer.index` drains a user's queue of one kind: records still
in the store are embedded (or take the vectors given) and upserted, records gone from it
are deleted from the index, then their queue entries are cleared. If the vector store is
down the entries stay, and the next `index`/`index_all` (run before every memory run)
catches up, so no record is left unsearchable and no deleted one stays findable.

A turn's messages are the exception (`store_live`): they wait in the queue while they are
on the chat's screen, and `catch_up` indexes the queue, in one call, once a turn's search
reaches past what it shows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from core.errors import VectorStoreUnavailable
from core.ports import VECTOR_KINDS, Embedder, Store, VectorIndex, VectorKind
from core.records import MEMORY_KIND, MessageRow, NewMessage, TopicRow
from core.text import person_text, topic_embedding_text

if TYPE_CHECKING:
    import numpy as np

BATCH = 256

log = logging.getLogger(__name__)


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
            # Only conversation has message vectors: a queued message of another kind
            # (marked by a migration) has its vector deleted like a deleted message.
            rows = [r for r in store.messages.by_ids(user_id, ids) if r["kind"] == MEMORY_KIND]
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
        if kind == "passages":
            passages = store.attachments.passages_by_ids(user_id, ids)
            metadata = [{"message_id": p["message_id"]} for p in passages]
            texts = [f"{p['name']}: {p['content']}" for p in passages]
            return [p["id"] for p in passages], texts, metadata
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
            import numpy as np

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
        *,
        on_batch: Callable[[int], None] | None = None,
    ) -> int:
        """Index the user's queued records of `kind`; returns how many were upserted.

        `vectors` are precomputed vectors by record id (a topic embedded by the memory
        graph); other records are embedded here. `on_batch` is told how many queued
        records each batch took off the queue. Raises `VectorStoreUnavailable` when
        the vector store is down; the queue then keeps what is left.
        """
        total = 0
        while pending := self.store.vector_queue.pending(user_id, kind, BATCH):
            total += self._index_batch(user_id, kind, pending, vectors or {})
            if on_batch is not None:
                on_batch(len(pending))
        return total

    def message_vectors(self, user_id: int, messages: Sequence[MessageRow]) -> np.ndarray:
        """Unit vectors of the user's conversation `messages`, one row each, in order: the
        index's own where it holds one that is current, the rest embedded here (those
        still queued: new, or edited since; all of them while the vector store is down).
        The index holds what this embedder made of the same text, so the rows are the
        ones embedding every message again would give."""
        import numpy as np

        ids = [message["id"] for message in messages]
        try:
            stored = self.vectors.vectors("messages", user_id, ids)
        except VectorStoreUnavailable:
            stored = {}
        for record_id in self.store.vector_queue.pending_among(user_id, "messages", ids):
            stored.pop(record_id, None)
        missing = [message["content"] for message in messages if message["id"] not in stored]
        encoded = iter(self.embedder.encode(missing) if missing else [])
        rows = [stored[i] if i in stored else next(encoded) for i in ids]
        return np.stack(rows).astype(np.float32, copy=False) if rows else np.zeros((0, 0))

    def reindex(self, user_id: int) -> dict[str, int]:
        """Rebuild the user's vectors from the relational store: each kind's collection (of
        this embedder) dropped, every record queued and embedded again. Counts per kind."""
        counts = {}
        for kind in VECTOR_KINDS:
            self.vectors.drop(kind, user_id)
            self.store.vector_queue.mark_all(user_id, kind)
            counts[kind] = self.index(user_id, kind)
        return counts

    def embedder_change(self) -> tuple[str, str] | None:
        """(the embedder the index was built with, this one) when they differ, else None.
        An index with no embedder recorded (new, or older than the record) takes this one."""
        built_with = self.store.vector_queue.embedder()
        if built_with is None:
            self.store.vector_queue.set_embedder(self.embedder.name)
            return None
        return None if built_with == self.embedder.name else (built_with, self.embedder.name)

    def index_all(self, user_id: int) -> dict[str, int]:
        """Index everything of this user still queued; counts of upserts per kind."""
        counts = {kind: self.index(user_id, kind) for kind in VECTOR_KINDS}
        return {kind: count for kind, count in counts.items() if count}

    def store_messages(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages (all or nothing), then index them for message-level search.

        The relational write comes first and alone decides what is stored. Indexing
        covers every message still queued, so a vector store that was down for earlier
        messages is caught up here; if it is down now, the messages stay stored (and
        queued) and `VectorStoreUnavailable` propagates. A turn stores its messages with
        `store_live` instead.
        """
        rows = self.store.messages.add(user_id, list(messages))
        self.index(user_id, "messages")
        return rows

    def store_live(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages of the conversation going on (all or nothing); their vectors wait
        in the queue until `catch_up` finds one of them outside what a turn shows.

        A turn's message stays in its chat's window for the turns after it, and vector
        search reaches only the messages outside the window: auto-RAG's earlier messages,
        and archived ones, whose queue every memory run drains first (`index_all`).
        Embedded Chroma holds the GIL through an upsert (its bindings release it for
        reads only), which stalls every chat's turn; queued, a window's worth of messages
        goes in one upsert instead of one a message."""
        return self.store.messages.add(user_id, list(messages))

    def catch_up(self, user_id: int, in_context: Collection[int]) -> bool:
        """Index the user's queued messages, all of them in one go, once any is outside
        `in_context` (the messages a turn already shows: its window and itself). Whether
        every message outside the context is indexed (False: the vector store is down and
        the queue keeps them, logged)."""
        queued = self.store.vector_queue.pending(user_id, "messages", BATCH)
        if all(message_id in in_context for message_id in queued):
            return True
        return self.index_later_if_down(user_id, "messages")

    def index_later_if_down(self, user_id: int, kind: VectorKind) -> bool:
        """`index`, except that a vector store that is down is logged, not raised: the queue
        keeps the records for the next run. Whether the index is up to date."""
        try:
            self.index(user_id, kind)
        except VectorStoreUnavailable as error:
            log.warning("vectors unavailable, %s queued for later: %s", kind, error)
            return False
        return True
