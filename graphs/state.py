"""Graph state types. Plain TypedDicts of JSON-friendly values, so checkpoints stay portable."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from stores.records import MessageRow


class TopicProposal(TypedDict):
    """A topic as the splitter proposes it: a summary and a message range."""

    summary: str
    start_msg_id: int
    end_msg_id: int


class TopicDraft(TypedDict):
    """A validated topic: its summary and exactly the chunk messages it holds."""

    summary: str
    message_ids: list[int]


class CoverageReport(TypedDict):
    clamped: int
    overlaps_resolved: int
    uncovered: list[int]
    oversized_split: int
    empty_summaries: int
    unknown_ids: int


class MergeRecord(TypedDict):
    source_id: int
    target_id: int
    similarity: float
    reason: str
    decided_by: Literal["llm", "rule"]


class FactsReport(TypedDict):
    status: Literal["done", "skipped", "failed"]
    reason: str | None
    topics: list[int]
    added: int
    updated: int
    deleted: int
    people_added: int
    people_updated: int
    people_merged: int


class MemoryState(TypedDict):
    """One memory-graph run over one chunk of a user's unarchived messages.

    Every key is overwritten by the node that owns it (no accumulating
    reducers), so a per-user thread can run chunk after chunk.
    """

    chunk: NotRequired[list[MessageRow]]
    proposals: NotRequired[list[TopicProposal]]
    split_by: NotRequired[Literal["llm", "embeddings"]]
    split_fallback: NotRequired[str | None]
    drafts: NotRequired[list[TopicDraft]]
    coverage: NotRequired[CoverageReport]
    topic_vectors: NotRequired[list[list[float]]]
    saved_topic_ids: NotRequired[list[int]]
    merges: NotRequired[list[MergeRecord]]
    facts: NotRequired[FactsReport]


class TopicCandidate(TypedDict):
    """A topic found by hybrid search, as the reranker sees it."""

    id: int
    summary: str
    date: str
    """First message's date, YYYY-MM-DD."""
    message_count: int
    size_chars: int
    score: float
    """Fused (RRF) score; candidates are ordered by it, best first."""
    vector_score: float | None
    """Cosine similarity to the query, when the vector search found it."""


class PersonCandidate(TypedDict):
    id: int
    name: str
    description: str
    score: float


class SelectedTopic(TypedDict):
    id: int
    reason: str
    excerpt: str | None
    score: float


class SelectedPerson(TypedDict):
    id: int
    reason: str
