"""Per-run settings passed to graphs with `context_schema=` and read from `runtime.context`.

A context field named like a setting takes its default from `Settings` and its value
from the process's settings in `from_settings`, so each default is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Self, TypeVar

from pydantic import TypeAdapter, ValidationError

from core.settings import Settings

DEFAULTS = Settings.model_construct()
"""The settings' defaults (no environment read)."""


class FromSettings:
    @classmethod
    def from_settings(cls, settings: Settings, *, user_id: int, **overrides: Any) -> Self:
        """The context of one run: the fields that are settings take the settings' values."""
        shared = {
            field.name: getattr(settings, field.name)
            for field in fields(cls)  # type: ignore[arg-type]
            if field.name in Settings.model_fields
        }
        return cls(user_id=user_id, **{**shared, **cls.derived(settings), **overrides})

    @classmethod
    def derived(cls, settings: Settings) -> dict[str, Any]:
        """Fields computed from settings of another name or unit."""
        return {}


class InvalidContext(ValueError):
    """A run's context with a field missing or of the wrong type."""


C = TypeVar("C", bound=FromSettings)


def checked(context_type: type[C]) -> type[C]:
    """`context_type` whose constructor checks the fields' types and reports a missing or
    invalid field in one sentence, for a server that builds the context from JSON
    (LangGraph Studio): the run fails with that sentence instead of a `TypeError` from
    the constructor, or a wrong type failing later inside a node."""
    adapter = TypeAdapter(context_type)

    def __init__(self: C, **values: Any) -> None:
        try:
            valid = adapter.validate_python(values)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
                for problem in error.errors()
            )
            raise InvalidContext(
                f"invalid run context ({problems}). Set the context in the assistant's "
                'configuration, e.g. {"user_id": 1}'
            ) from None
        context_type.__init__(self, **{f.name: getattr(valid, f.name) for f in fields(valid)})

    namespace = {"__init__": __init__, "__doc__": context_type.__doc__}
    return dataclass(kw_only=True, init=False)(
        type(context_type.__name__, (context_type,), namespace)
    )


@dataclass(kw_only=True)
class MemoryContext(FromSettings):
    """One memory-graph run: whose messages, and the archival thresholds (seed 000)."""

    user_id: int
    archive_all: bool = False
    """Archive every unarchived message now (saved sessions), not only stale chunks."""
    chunk_interval_s: float = DEFAULTS.chunk_interval.total_seconds()
    topic_max_gap_s: float = DEFAULTS.topic_max_gap.total_seconds()
    """Consecutive messages (in time order) further apart never share a topic, whatever
    the splitter proposed; the pause ends a sitting, as `chunk_interval` does."""
    max_chunk_size: int = DEFAULTS.max_chunk_size
    split_threshold_chars: int = DEFAULTS.split_threshold_chars
    archive_batch_messages: int = DEFAULTS.archive_batch_messages
    archive_max_wait_s: float = DEFAULTS.archive_max_wait.total_seconds()
    """Finished sittings wait for one another until `archive_batch_messages` are ready, or
    the oldest has waited this long (`nodes.memory.chunking.archive_batch`)."""
    consolidation_similarity_threshold: float = DEFAULTS.consolidation_similarity_threshold
    max_merged_size_chars: int = DEFAULTS.max_merged_size_chars
    consolidation_batch_size: int = DEFAULTS.consolidation_batch_size
    now_ts: float | None = None
    """The clock for staleness; None means the wall clock."""

    @classmethod
    def derived(cls, settings: Settings) -> dict[str, Any]:
        return {
            "chunk_interval_s": settings.chunk_interval.total_seconds(),
            "topic_max_gap_s": settings.topic_max_gap.total_seconds(),
            "archive_max_wait_s": settings.archive_max_wait.total_seconds(),
        }


@dataclass(kw_only=True)
class ResponseContext(FromSettings):
    """One user turn: whose memory, retrieval thresholds, reranker limits and token budgets."""

    user_id: int
    now_iso: str | None = None
    """The turn's date and time (ISO-8601); None means the wall clock."""

    # Retrieval (seed 000) and fusion (seed 004).
    topics_threshold: float = DEFAULTS.topics_threshold
    retrieved_topics_count: int = DEFAULTS.retrieved_topics_count
    rrf_k: int = 60

    # Reranker switch and limits (seed 001); the limits come from the `reranker_*` settings.
    reranker_enabled: bool = DEFAULTS.reranker_enabled
    """Off: the search order decides, with `rerank_fallback` "disabled"."""
    rerank_max_topics: int = DEFAULTS.reranker_max_topics
    rerank_max_people: int = 10
    rerank_max_tool_calls: int = DEFAULTS.reranker_max_tool_calls
    rerank_timeout_s: float = DEFAULTS.reranker_timeout_s
    excerpt_threshold_chars: int = 25_000

    # Hybrid search beyond the topic vectors: message hits vote for their topics.
    message_hits_count: int = 50
    """Length of each message-level ranked list (vectors, full text) in the fusion."""
    relevance_floor: bool = DEFAULTS.relevance_floor
    """Off: the topic search returns its nearest topics however unrelated (nodes.relevance)."""
    # Calibrated by `topica eval floor` (local USE embedder, FTS5 bm25): each the 95th
    # percentile of the best score of 100 unrelated questions (EN+RU) on the 5 LoCoMo dev
    # memories. There the floors turned away 1 of 760 LoCoMo questions (none with the
    # names rule, nodes.response.relevance) and answered "nothing" to 84% of the unrelated
    # ones; leave-one-conversation-out (and one half of the unrelated questions) out:
    # 0.18% and 81%. Another embedder needs its own figures.
    message_vector_floor: float = 0.374
    topic_vector_floor: float = 0.210
    # The vector floors above hold for memories that size; in a smaller one the best of
    # fewer unrelated records reaches less, so a floor grows with the memory: with n
    # archived messages (topics), min(floor, base + per_log · ln n). Fitted by `topica
    # eval floor` on windows of 2 to 256 messages of the same memories (the 95th
    # percentile per size). Leave-one-conversation-out, vector signals alone, in
    # 4-message memories: LoCoMo questions turned away 9.2% with the fixed floors, 0.7%
    # with these; unrelated ones answered "nothing" 90.1% (fixed: 99.6%).
    message_vector_floor_base: float = 0.161
    message_vector_floor_per_log: float = 0.0311
    topic_vector_floor_base: float = 0.108
    topic_vector_floor_per_log: float = 0.0257
    message_bm25_floor: float = 6.75
    topic_bm25_floor: float = 3.55
    fact_candidates_count: int = 10
    facts_threshold: float = 0.35
    people_candidates_count: int = 20
    people_threshold: float = 0.30

    # Which messages of recalled topics fill the room when they do not fit whole
    # (`nodes.response.excerpts`): fused ranks of full-text and vector hits.
    excerpt_lead_hits: int = 3
    """The best full-text hits that lead whatever their fused score."""
    excerpt_vector_weight: float = 0.5
    """A vector hit's vote as a share of a full-text hit's at the same rank."""
    excerpt_neighbour_hits: int = 20
    """Hits at or above this rank lend the messages beside them a share of their vote."""
    excerpt_neighbour_weight: float = 0.6
    """That share."""
    excerpt_neighbour_reach: int = 5
    """How far from a hit the share goes: a message `d` places away gets the share to the
    power `d`."""
    excerpt_long_answer_chars: int = 1200
    """An assistant's message longer than this is a long answer: it comes after every
    other message of the recalled topics (`nodes.response.excerpts.long_answers`)."""
    excerpt_named_speakers: bool = True
    """A question naming some of the recalled messages' authors but not all ranks the
    others' hits only by what they lend their neighbours."""
    chunk_interval_s: float = DEFAULTS.chunk_interval.total_seconds()
    topic_max_gap_s: float = DEFAULTS.topic_max_gap.total_seconds()
    """With `chunk_interval_s`, the pauses that end a sitting
    (`nodes.shared.clock.ends_sitting`): a hit's share reaches its replies in a later
    topic only up to such a pause (`nodes.response.excerpts.replies_after`)."""
    excerpt_vector_depth: int = 200
    """How deep the turn's message vector list runs for ranking the recalled topics'
    messages (`nodes.response.excerpts`) and the candidates by their best one
    (`nodes.response.topic_order`); the fusion reads only its first `message_hits_count`.
    200 is about what the default 8,000-token topics layer holds (LoCoMo's messages run
    38 tokens each), so every message the context can show has a rank of its own."""

    # Context assembly (seeds 002-004): the session window and one token budget per layer.
    sliding_window_messages: int = 20
    summary_refresh_messages: int = 20
    """The rolling summary is rewritten once this many messages have left the window."""
    system_budget_tokens: int = DEFAULTS.system_budget_tokens
    """The system prompt with the date and the core identity facts."""
    summary_budget_tokens: int = DEFAULTS.summary_budget_tokens
    auto_rag_budget_tokens: int = DEFAULTS.auto_rag_budget_tokens
    topics_budget_tokens: int = DEFAULTS.topics_budget_tokens
    people_budget_tokens: int = DEFAULTS.people_budget_tokens
    facts_budget_tokens: int = DEFAULTS.facts_budget_tokens
    window_budget_tokens: int = DEFAULTS.window_budget_tokens
    """The sliding window; the auto-RAG block is taken out of it (seed 004)."""
    current_message_budget_tokens: int = DEFAULTS.current_message_budget_tokens

    # Auto-RAG over the current segment (seed 004).
    auto_rag_top_k: int = 3
    auto_rag_search_limit: int = 20
    auto_rag_min_similarity: float = 0.30
    """Cosine to the current message below which a hit is not relevant (local USE scale)."""
    auto_rag_min_message_tokens: int = 10
    """Shorter messages ("ok", "thanks") are never recalled."""

    # The responder's tool loop (seed 002).
    max_tool_iterations: int = 5
    """Tool rounds before the synthesis turn, which has the tools switched off."""

    turn_id: str | None = None
    """The turn's id (its message's external id), under which a caller that streams the
    answer can stop it (`Deps.stops`); None when nobody can."""

    @classmethod
    def derived(cls, settings: Settings) -> dict[str, Any]:
        return {
            "rerank_max_topics": settings.reranker_max_topics,
            "rerank_max_tool_calls": settings.reranker_max_tool_calls,
            "rerank_timeout_s": settings.reranker_timeout_s,
            "chunk_interval_s": settings.chunk_interval.total_seconds(),
            "topic_max_gap_s": settings.topic_max_gap.total_seconds(),
        }


@dataclass(kw_only=True)
class MediaContext(FromSettings):
    """One run of the media graph: whose messages, and the transcription endpoint."""

    user_id: int
    transcription_base_url: str | None = None
    transcription_model: str = DEFAULTS.transcription_model
    transcription_timeout_s: float = DEFAULTS.transcription_timeout_s


@dataclass(kw_only=True)
class TaskContext(FromSettings):
    """One run of a scheduled task: whose task, when it runs, how many previous runs it sees."""

    user_id: int
    now_iso: str | None = None
    """The run's date and time (ISO-8601); None means the wall clock."""
    task_history: int = DEFAULTS.task_history
