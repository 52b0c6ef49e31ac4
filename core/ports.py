"""The contracts of the services nodes and application code use, implemented in `stores/`.

Nodes depend on these protocols, never on an engine: `stores.relational` implements the
repositories over SQLite, `stores.vectors` the vector index over Chroma, `stores.embedders`
the embedder, `stores.indexing` the indexer. Every repository method takes the user id
and touches only that user's rows; a method that refuses a request (an unknown id, an id
of another user, a bad value) raises `core.errors.StoreError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

import numpy as np

from core.records import (
    FactRow,
    FactType,
    MessageRow,
    NewMessage,
    PersonRow,
    SessionSummaryRow,
    TopicRow,
)

VectorKind = Literal["topics", "facts", "people", "messages"]
VECTOR_KINDS: tuple[VectorKind, ...] = ("topics", "facts", "people", "messages")


class SessionRepository(Protocol):
    """Users, their conversation segments (`/new`) and each segment's rolling summary."""

    def current_segment(self, user_id: int) -> int: ...
    def start_new_segment(self, user_id: int) -> int: ...
    def user_ids(self) -> list[int]: ...
    def summary(self, user_id: int, segment: int) -> SessionSummaryRow | None: ...
    def save_summary(
        self,
        user_id: int,
        segment: int,
        first_seq: int,
        last_seq: int,
        summary: str,
        written_by: Literal["llm", "extractive"],
    ) -> SessionSummaryRow: ...


class MessageRepository(Protocol):
    def add(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages in order, all or nothing; returns the newly stored rows (a
        message whose external id the user already has is skipped)."""
        ...

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[MessageRow]: ...
    def by_external_id(self, user_id: int, external_id: str) -> MessageRow | None: ...
    def unarchived(self, user_id: int, limit: int | None = None) -> list[MessageRow]: ...
    def users_with_unarchived(self) -> list[tuple[int, int, float]]: ...
    def of_topic(self, user_id: int, topic_id: int) -> list[MessageRow]: ...
    def external_ids_by_topic(
        self, user_id: int, topic_ids: Sequence[int]
    ) -> dict[int, list[str]]: ...
    def recent(self, user_id: int, limit: int, segment: int | None = None) -> list[MessageRow]: ...
    def of_segment(self, user_id: int, segment: int) -> list[MessageRow]: ...
    def count(self, user_id: int) -> int: ...
    def all_of(self, user_id: int) -> list[MessageRow]: ...
    def search(
        self, user_id: int, text: str, limit: int, segment: int | None = None
    ) -> list[tuple[int, float]]: ...


class TopicRepository(Protocol):
    def save(self, user_id: int, drafts: Sequence[tuple[str, Sequence[int]]]) -> list[TopicRow]:
        """Create topics from (summary, member message ids); idempotent."""
        ...

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[TopicRow]: ...
    def get(self, user_id: int, topic_id: int) -> TopicRow: ...
    def all_of(self, user_id: int) -> list[TopicRow]: ...
    def to_consolidate(self, user_id: int, limit: int) -> list[TopicRow]: ...
    def mark_consolidation_checked(self, user_id: int, topic_ids: Sequence[int]) -> None: ...
    def merge(
        self, user_id: int, source_id: int, target_id: int, merged_summary: str
    ) -> TopicRow: ...
    def without_facts(self, user_id: int, limit: int) -> list[TopicRow]: ...
    def users_without_facts(self) -> list[int]: ...
    def mark_facts_extracted(self, user_id: int, topic_ids: Sequence[int]) -> None: ...
    def delete(self, user_id: int, topic_id: int) -> None: ...
    def search(self, user_id: int, text: str, limit: int) -> list[tuple[int, float]]: ...


class FactRepository(Protocol):
    def add(
        self,
        user_id: int,
        content: str,
        fact_type: FactType,
        importance: int,
        topic_id: int | None = None,
        reason: str | None = None,
    ) -> FactRow: ...
    def update(
        self,
        user_id: int,
        fact_id: int,
        content: str | None = None,
        importance: int | None = None,
        fact_type: FactType | None = None,
        reason: str | None = None,
        topic_id: int | None = None,
    ) -> FactRow: ...
    def delete(
        self, user_id: int, fact_id: int, reason: str | None = None, topic_id: int | None = None
    ) -> FactRow: ...
    def get(self, user_id: int, fact_id: int) -> FactRow: ...
    def all_of(self, user_id: int) -> list[FactRow]: ...
    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[FactRow]: ...
    def core(self, user_id: int, min_importance: int = 90) -> list[FactRow]: ...
    def history(self, user_id: int) -> list[dict[str, Any]]: ...


class PeopleRepository(Protocol):
    def add(
        self,
        user_id: int,
        name: str,
        aliases: Sequence[str] = (),
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow: ...
    def update(
        self,
        user_id: int,
        person_id: int,
        *,
        name: str | None = None,
        aliases: Sequence[str] | None = None,
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow: ...
    def merge(self, user_id: int, source_id: int, target_id: int) -> PersonRow: ...
    def get(self, user_id: int, person_id: int) -> PersonRow: ...
    def all_of(self, user_id: int) -> list[PersonRow]: ...
    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[PersonRow]: ...


class VectorQueue(Protocol):
    """Records whose vector the index does not have yet, written with the record."""

    def pending(self, user_id: int, kind: VectorKind, limit: int = 1000) -> list[int]: ...
    def clear(self, user_id: int, kind: VectorKind, ids: Sequence[int]) -> None: ...
    def mark(self, user_id: int, kind: VectorKind, ids: Sequence[int]) -> None: ...


class Store(Protocol):
    """The relational store: one repository per entity; `atomic()` spans them."""

    sessions: SessionRepository
    messages: MessageRepository
    topics: TopicRepository
    facts: FactRepository
    people: PeopleRepository
    vector_queue: VectorQueue

    def atomic(self) -> AbstractContextManager[None]: ...
    def close(self) -> None: ...


class VectorIndex(Protocol):
    """Per-user nearest-neighbour search over record vectors (cosine)."""

    def upsert(
        self,
        kind: VectorKind,
        user_id: int,
        ids: Sequence[int],
        vectors: np.ndarray,
        metadatas: Sequence[dict[str, Any]] | None = None,
    ) -> None: ...
    def delete(self, kind: VectorKind, user_id: int, ids: Sequence[int]) -> None: ...
    def query(
        self,
        kind: VectorKind,
        user_id: int,
        vector: np.ndarray,
        limit: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[int, float]]: ...
    def vectors(
        self, kind: VectorKind, user_id: int, ids: Sequence[int]
    ) -> dict[int, np.ndarray]: ...
    def count(self, kind: VectorKind, user_id: int) -> int: ...


class Embedder(Protocol):
    """Texts to L2-normalised float32 vectors."""

    name: str

    def encode(self, texts: list[str]) -> np.ndarray: ...
    def encode_query(self, text: str) -> np.ndarray: ...


class Indexer(Protocol):
    """The one path that keeps the vector index in step with the relational store."""

    def index(
        self,
        user_id: int,
        kind: VectorKind,
        vectors: Mapping[int, Sequence[float]] | None = None,
    ) -> int:
        """Embed (unless given) and upsert the user's queued records of `kind`."""
        ...

    def index_all(self, user_id: int) -> dict[str, int]: ...
    def store_messages(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages (relational first, all or nothing), then index them."""
        ...
