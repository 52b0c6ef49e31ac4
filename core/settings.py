"""Process-wide settings, read from `TOPICA_*` environment variables and `.env`.

Per-run values (user id, budgets a run may override) travel in the graphs'
`Context`; this module holds what the process is configured with.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, SecretStr, create_model, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core import limits

AgentName = Literal[
    "splitter",
    "merger",
    "archivist",
    "enricher",
    "reranker",
    "responder",
    "summariser",
    "describer",
    "tasker",
]
AGENTS: tuple[AgentName, ...] = get_args(AgentName)
MULTIMODAL_AGENTS: frozenset[AgentName] = frozenset({"describer"})
"""Agents sent images and audio: they get no model unless one is named for them (the
default model may well read text only)."""


AGENT_MAX_TOKENS: dict[AgentName, int] = {
    "splitter": 2048,
    "merger": 512,
    "archivist": 1024,
    "enricher": 128,
    "reranker": 512,
    "responder": 1024,
    "summariser": 512,
    "describer": 1024,
    "tasker": 1024,
}
"""Each agent's default `<agent>_max_tokens`."""
AGENT_MODEL_NOTES: dict[AgentName, str] = {
    "tasker": "Runs a scheduled task that asks for work (not a plain reminder).",
    "describer": "A multimodal model: describes photos, transcribes voice without an "
    "endpoint. Not defaulted to llm_model.",
}


def agent_fields() -> dict[str, Any]:
    """Two settings per agent: `<agent>_max_tokens`, the most completion tokens one call
    asks for, and `<agent>_model`, its own model (None: see `Settings.model_for`)."""
    fields: dict[str, Any] = {}
    for agent in AGENTS:
        fields[f"{agent}_max_tokens"] = (int, Field(default=AGENT_MAX_TOKENS[agent], gt=0))
        note = AGENT_MODEL_NOTES.get(agent)
        fields[f"{agent}_model"] = (str | None, Field(default=None, description=note))
    return fields


AgentSettings = create_model("AgentSettings", __base__=BaseSettings, **agent_fields())
"""The agents' own settings, declared from `AGENTS` and the tables above."""


class EmbeddingsProvider(StrEnum):
    LOCAL = "local"
    OPENAI = "openai"


class Settings(AgentSettings):  # type: ignore[misc,valid-type]
    """Everything Topica can be configured with; `.env.example` lists each variable."""

    model_config = SettingsConfigDict(
        env_prefix="TOPICA_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        env_ignore_empty=True,
    )

    data_dir: Path = Field(default=Path("data"), description="SQLite, Chroma and checkpoints.")
    sqlite_busy_timeout_s: float = 10.0
    # Relational store: SQLite under data_dir (default), or a shared PostgreSQL database.
    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql://… selects the PostgreSQL store (replicas); unset = SQLite.",
    )
    database_schema: str = Field(
        default="public",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="PostgreSQL schema of this deployment's tables.",
    )
    database_pool_size: int = Field(default=8, ge=1, description="PostgreSQL connections.")
    memory_claim_lease_s: float = Field(
        default=60.0, gt=0, description="How long a replica's claim on a user's memory run holds."
    )
    default_timezone: str = Field(
        default="UTC", description="IANA time zone of a user who has not set one (tasks)."
    )
    task_history: int = Field(
        default=5, ge=0, description="Finished runs of a task its next run sees."
    )
    task_claim_lease_s: float = Field(
        default=120.0, gt=0, description="How long a replica's claim on a due task run holds."
    )
    task_poll_s: float = Field(
        default=2.0, gt=0, description="How often the bot looks for due task runs."
    )
    log_format: Literal["text", "json"] = "text"
    ingest_max_bytes: int = Field(
        default=256 * 1024 * 1024, gt=0, description="Largest saved session `topica ingest` reads."
    )
    ingest_max_line_bytes: int = Field(
        default=16 * 1024 * 1024, gt=0, description="Longest line of a saved session."
    )

    # Chat models: any OpenAI-compatible endpoint. No model = the non-LLM path.
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str | None = Field(default=None, description="Default model for every agent.")
    llm_timeout_s: float = 60.0
    llm_max_retries: int = 2
    # What the endpoint honours (`topica doctor --llm` probes each); agents use the
    # strongest mechanism these allow.
    llm_named_tool_choice: bool = Field(
        default=True, description="The endpoint honours a tool_choice naming one function."
    )
    llm_required_tool_choice: bool = Field(
        default=True, description='The endpoint honours tool_choice "required".'
    )
    llm_tool_calls: bool = Field(
        default=True,
        description="The endpoint returns tool calls; off = a forced call is "
        "asked for as JSON of its arguments.",
    )
    llm_json_schema: bool = Field(
        default=False,
        description="Ask for JSON by response_format json_schema (the shape "
        "enforced) instead of json_object.",
    )
    llm_json_object: bool = Field(
        default=True, description="The endpoint honours response_format json_object."
    )
    llm_token_limit_field: Literal["max_completion_tokens", "max_tokens"] = Field(
        default="max_completion_tokens",
        description="The request field the endpoint reads as a reply's token limit.",
    )
    turn_deadline_s: float = Field(
        default=90.0,
        ge=0,
        description="A turn's deadline: past it the user gets what was recalled, with a "
        "note; 0 = none.",
    )
    turn_fallback_reserve_s: float = Field(
        default=5.0,
        ge=0,
        description="Of a turn's deadline, the seconds kept for the answer from memory when "
        "the models are late (more when the latest such answers took longer; at most half "
        "the deadline).",
    )
    # Each agent's own model and token limit: `AgentSettings`.
    # Speech to text: an OpenAI-compatible `POST {base}/audio/transcriptions` (OpenAI,
    # Groq, faster-whisper-server). Unset = the describer transcribes, or labels stay.
    transcription_base_url: str | None = None
    transcription_api_key: SecretStr | None = None
    transcription_model: str = "whisper-1"
    transcription_timeout_s: float = Field(default=60.0, gt=0)

    # Embeddings.
    embeddings_provider: EmbeddingsProvider = EmbeddingsProvider.LOCAL
    embeddings_model: str = "text-embedding-3-small"
    embeddings_base_url: str | None = None
    embeddings_api_key: SecretStr | None = None
    cache_dir: Path | None = Field(
        default=None,
        description="The local encoder's prepared files; unset = $XDG_CACHE_HOME/topica or "
        "~/.cache/topica.",
    )

    # Vector store: a persistent Chroma under data_dir, or a Chroma server.
    chroma_host: str | None = None
    chroma_port: int = 8000

    # Archival (seed 000, "rag" section).
    chunk_interval: timedelta = timedelta(hours=1)
    topic_max_gap: timedelta = Field(
        default=timedelta(hours=6),
        description="Messages further apart than this never share a topic.",
    )
    max_chunk_size: int = 400
    split_threshold_chars: int = 25_000
    archive_batch_messages: int = Field(
        default=0,
        ge=0,
        description="Finished sittings wait until this many messages are ready to archive "
        "together (fewer LLM calls in live chat); 0 = each sitting once it is over.",
    )
    archive_max_wait: timedelta = Field(
        default=timedelta(days=3),
        description="The longest a finished sitting waits for others (archive_batch_messages).",
    )
    consolidation_similarity_threshold: float = 0.85
    max_merged_size_chars: int = 50_000
    consolidation_batch_size: int = 10

    # Retrieval (seed 000 "retrieval", seed 001 limits).
    topics_threshold: float = 0.60
    retrieved_topics_count: int = 50
    relevance_floor: bool = Field(
        default=True,
        description="Off: the topic search returns its nearest topics however unrelated.",
    )

    # The reranker (seed 001's `reranker_*` switches); disabled = the search order decides.
    reranker_enabled: bool = True
    reranker_max_topics: int = Field(default=5, ge=1)
    reranker_timeout_s: float = Field(default=10.0, gt=0, description="For the whole reranker run.")
    reranker_max_tool_calls: int = Field(default=3, ge=1)

    # The token budget of each layer of the responder's context (seeds 002-004).
    system_budget_tokens: int = Field(
        default=1_000, ge=0, description="The system prompt with the date and core facts."
    )
    summary_budget_tokens: int = Field(default=500, ge=0)
    auto_rag_budget_tokens: int = Field(default=400, ge=0)
    topics_budget_tokens: int = Field(default=8_000, ge=0)
    people_budget_tokens: int = Field(default=500, ge=0)
    facts_budget_tokens: int = Field(default=500, ge=0)
    window_budget_tokens: int = Field(
        default=3_000, ge=0, description="The sliding window; auto-RAG's tokens come out of it."
    )
    current_message_budget_tokens: int = Field(default=4_000, ge=0)

    # Streaming: answers appear as they are written (Telegram drafts, `topica chat`).
    streaming: bool = True
    draft_interval_s: float = Field(
        default=0.4, gt=0, description="Least time between two updates of a Telegram draft."
    )

    # Telegram bot (seed 002).
    telegram_token: SecretStr | None = None
    telegram_api_url: str = Field(
        default="https://api.telegram.org", description="Bot API server base URL."
    )
    allowed_user_ids: Annotated[list[int], NoDecode] = Field(
        default_factory=list, description="Comma-separated Telegram user ids; empty = nobody."
    )
    turn_wait_s: float = Field(default=2.0, description="Quiet time that closes a message group.")
    group_memory: bool = Field(
        default=False,
        description="Store allowed users' group messages in their memory (never answered).",
    )
    webhook_url: str | None = Field(
        default=None, description="Public HTTPS URL for updates; unset = long polling."
    )
    webhook_secret: SecretStr | None = None
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 8080
    webapp_url: str | None = Field(
        default=None, description="Public HTTPS URL of the Mini App; unset = no Mini App."
    )
    webapp_host: str = "127.0.0.1"
    webapp_port: int = 8081
    webapp_max_age_s: int = Field(
        default=86400, description="Oldest Mini App initData accepted (seconds)."
    )
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = Field(
        default=None, description="Serve /metrics and /healthz here; none = no metrics server."
    )
    memory_worker_interval_s: float = 60.0
    memory_worker_max_backoff_s: float = 3600.0
    max_messages_per_answer: int = Field(
        default=5, gt=0, description="Most Telegram messages one answer is sent as."
    )
    max_file_bytes: int = Field(
        default=20 * 1024 * 1024, description="Largest file the bot downloads (Bot API: 20 MB)."
    )
    max_document_chars: int = Field(
        default=limits.MAX_DOCUMENT_CHARS,
        description="Text taken from one PDF or text document, or kept of one transcript.",
    )
    document_read_cpu_s: float = Field(
        default=limits.DOCUMENT_READ_CPU_S,
        description="CPU seconds one PDF's reading may use (its worker process).",
    )
    document_read_timeout_s: float = Field(
        default=limits.DOCUMENT_READ_TIMEOUT_S,
        description="Wall-clock seconds one PDF's reading may take.",
    )
    document_read_memory_mb: int = Field(
        default=limits.DOCUMENT_READ_MEMORY_MB,
        description="Address space of the process reading one PDF, in MB.",
    )
    document_max_pages: int = Field(
        default=limits.DOCUMENT_MAX_PAGES, description="Most pages of a PDF read."
    )
    document_max_decompressed_bytes: int = Field(
        default=limits.DOCUMENT_MAX_DECOMPRESSED_BYTES,
        description="Most decompressed content-stream bytes of a PDF, counted per page.",
    )
    shutdown_timeout_s: float = Field(
        default=30.0, description="How long in-flight turns and memory runs may finish."
    )

    @field_validator("allowed_user_ids", mode="before")
    @classmethod
    def _comma_separated_ids(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [int(part) for part in value.replace(" ", "").split(",") if part]
        if isinstance(value, int):
            return [value]
        return value

    @field_validator("chunk_interval", "topic_max_gap", "archive_max_wait", mode="before")
    @classmethod
    def _seconds_or_iso(cls, value: object) -> object:
        """`3600`, `"3600"` and `"PT1H"` all mean one hour."""
        if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
            return float(value)
        return value

    def model_for(self, agent: AgentName) -> str | None:
        """The model an agent uses: its own override, else the default (not for a
        multimodal agent), else none."""
        own = getattr(self, f"{agent}_model")
        return own if agent in MULTIMODAL_AGENTS else own or self.llm_model

    def max_tokens_for(self, agent: AgentName) -> int:
        """The most completion tokens one call of `agent` asks for."""
        return int(getattr(self, f"{agent}_max_tokens"))

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "topica.sqlite3"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def checkpoints_path(self) -> Path:
        return self.data_dir / "checkpoints.sqlite3"
