"""Per-run settings passed to graphs with `context_schema=` and read from `runtime.context`.

A context field named like a setting takes its default from `Settings` and its value
from the process's settings in `from_settings`, so each default is written once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from typing import Any, Self, TypeVar

from pydantic import TypeAdapter, ValidationError

from core.settings import Settings
from core.tuning import Tuning, embedder_name, load_tuning, packaged_tuning

DEFAULTS = Settings.model_construct()
"""The settings' defaults (no environment read)."""


class AnswerClaim:
    """Who stores a turn's answer: its run, or the deadline that cut the run. The first to
    claim wins, atomically, so that only one of them ever stores. The run claims with the
    answer it is storing, so the deadline can send that very text without waiting for the
    store to end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: str | None = None
        self.answer = ""
        """The answer the run claimed to store."""

    def claim(self, owner: str, answer: str = "") -> bool:
        """Whether `owner` may store the answer: it claimed first, or claims again."""
        with self._lock:
            if self._owner is None:
                self._owner, self.answer = owner, answer
            return self._owner == owner


@dataclass(kw_only=True)
class RunContext:
    """What every graph's run context holds: whose run it is. A subclass's fields named
    like a setting take the settings' values in `from_settings`."""

    user_id: int
    """The user whose memory the run reads and writes."""

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


C = TypeVar("C", bound=RunContext)


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
class MemoryContext(RunContext):
    """One memory-graph run: whose messages, and the archival thresholds (seed 000)."""

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


@dataclass(frozen=True, kw_only=True)
class Budgets:
    """One token budget per context layer (each the setting `<layer>_budget_tokens`)."""

    system: int
    """The system prompt with the date and the core identity facts."""
    summary: int
    auto_rag: int
    topics: int
    people: int
    facts: int
    window: int
    """The sliding window; the auto-RAG block is taken out of it."""
    current_message: int

    @classmethod
    def of(cls, settings: Settings) -> Budgets:
        return cls(**{f.name: getattr(settings, f"{f.name}_budget_tokens") for f in fields(cls)})


@dataclass(kw_only=True)
class ResponseContext(RunContext):
    """One user turn: whose memory, retrieval thresholds, reranker limits and token budgets."""

    now_iso: str | None = None
    """The turn's date and time (ISO-8601); None means the wall clock."""

    topics_threshold: float = DEFAULTS.topics_threshold
    retrieved_topics_count: int = DEFAULTS.retrieved_topics_count
    reranker_enabled: bool = DEFAULTS.reranker_enabled
    """Off: the search order decides, with `rerank_fallback` "disabled"."""
    rerank_max_topics: int = DEFAULTS.reranker_max_topics
    rerank_max_tool_calls: int = DEFAULTS.reranker_max_tool_calls
    rerank_timeout_s: float = DEFAULTS.reranker_timeout_s
    relevance_floor: bool = DEFAULTS.relevance_floor
    """Off: the topic search returns its nearest topics however unrelated
    (`nodes.response.ranking.floors`)."""
    chunk_interval_s: float = DEFAULTS.chunk_interval.total_seconds()
    topic_max_gap_s: float = DEFAULTS.topic_max_gap.total_seconds()
    """With `chunk_interval_s`, the pauses that end a sitting
    (`nodes.shared.clock.ends_sitting`): a hit's share reaches its replies in a later
    topic only up to such a pause (`nodes.response.ranking.messages.replies_after`)."""
    tuning: Tuning = field(default_factory=packaged_tuning)
    """Search and ranking weights and floors: the embedder's calibration profile."""

    # Context assembly (seeds 002-004): the session window and one token budget per layer.
    sliding_window_messages: int = 20
    summary_refresh_messages: int = 20
    """The rolling summary is rewritten once this many messages have left the window."""
    budgets: Budgets = field(default_factory=lambda: Budgets.of(DEFAULTS))
    """One token budget per layer of the context."""

    # The responder's tool loop (seed 002).
    max_tool_iterations: int = 5
    """Tool rounds before the synthesis turn, which has the tools switched off."""

    turn_id: str | None = None
    """The turn's id (its message's external id), under which a caller that streams the
    answer can stop it (`Deps.stops`); None when nobody can."""
    answer_claim: Any = field(default_factory=AnswerClaim)
    """An `AnswerClaim`, claimed by `finalize` before it stores and by the deadline before
    it cuts the run (typed `Any` so the schema Studio builds of the context can hold it)."""
    answer_note: str = ""
    """A note put before the answer, in the message stored and the one sent alike (the
    deadline's, on the memory-only answer); empty for none."""

    @classmethod
    def derived(cls, settings: Settings) -> dict[str, Any]:
        return {
            "rerank_max_topics": settings.reranker_max_topics,
            "rerank_max_tool_calls": settings.reranker_max_tool_calls,
            "rerank_timeout_s": settings.reranker_timeout_s,
            "chunk_interval_s": settings.chunk_interval.total_seconds(),
            "topic_max_gap_s": settings.topic_max_gap.total_seconds(),
            "tuning": load_tuning(settings.data_dir, embedder_name(settings)),
            "budgets": Budgets.of(settings),
        }

    def budgeted(self, **changes: int) -> Self:
        """This context with some layers' budgets changed."""
        return replace(self, budgets=replace(self.budgets, **changes))

    def tuned(self, **changes: Any) -> Self:
        """This context with some tuning values changed (a benchmark's variant, a test)."""
        return replace(self, tuning=replace(self.tuning, **changes))


@dataclass(kw_only=True)
class MediaContext(RunContext):
    """One run of the media graph: whose messages, and the transcription endpoint."""

    transcription_base_url: str | None = None
    transcription_model: str = DEFAULTS.transcription_model
    transcription_timeout_s: float = DEFAULTS.transcription_timeout_s


@dataclass(kw_only=True)
class TaskContext(RunContext):
    """One run of a scheduled task: whose task, when it runs, how many previous runs it
    sees, how many rounds of tool calls the Tasker may make before it must answer."""

    now_iso: str | None = None
    """The run's date and time (ISO-8601); None means the wall clock."""
    task_history: int = DEFAULTS.task_history
    max_tool_rounds: int = 3
    run_id: str | None = None
    """The run's id in `Deps.stops` while its message is streamed (the bot's drafts): the
    Tasker then reads its reply as a stream, which LangGraph's `messages` mode shows as
    it is written. None: the reply is read whole."""
