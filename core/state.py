"""Graph state types. Plain TypedDicts of JSON-friendly values, so checkpoints stay portable."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypeVar

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from core.fallbacks import (
    DescribeFallback,
    EnrichFallback,
    FactsFallback,
    MergeFallback,
    RerankFallback,
    RespondFallback,
    SearchFallback,
    SplitFallback,
    SummaryFallback,
    TaskFallback,
    TranscribeFallback,
)
from core.found import Found
from core.records import AnsweredBy, MessageRow


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
    time_gap_split: int
    """Topics cut where consecutive messages lie over `topic_max_gap` apart."""
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
    reason: FactsFallback | None
    """Why facts were not (all) extracted: the Archivist's fallback reason."""
    topics: list[int]
    added: int
    updated: int
    deleted: int
    people_added: int
    people_updated: int
    people_merged: int
    waiting: NotRequired[int]
    """Topics still waiting for their facts after a deferred run."""


class Repair(TypedDict):
    """A model reply of the wrong shape that was set right and used."""

    agent: str
    repaired: str
    """`tool_call_in_content` (a tool call written as text), `json_repaired` (JSON that
    needed mending to parse) or `truncated` (cut at the token limit, still usable)."""


def added_repairs(current: list[Repair] | None, new: list[Repair] | None) -> list[Repair]:
    """Reducer of `repairs`: each agent call adds what was repaired; None starts over."""
    return [] if new is None else [*(current or []), *new]


class MemoryInput(TypedDict):
    """Nothing to fill in: whose messages and how eagerly is the run's Context."""


class MemoryState(TypedDict):
    """One memory-graph run over one chunk of a user's unarchived messages.

    Every key is overwritten by the node that owns it (no accumulating
    reducers), so a per-user thread can run chunk after chunk.
    """

    chunk: NotRequired[list[MessageRow]]
    facts_pending: NotRequired[bool]
    """No chunk is ready, but topics wait for fact extraction."""
    proposals: NotRequired[list[TopicProposal]]
    split_by: NotRequired[Literal["llm", "embeddings"]]
    split_fallback: NotRequired[SplitFallback | None]
    drafts: NotRequired[list[TopicDraft]]
    coverage: NotRequired[CoverageReport]
    topic_vectors: NotRequired[list[list[float]]]
    saved_topic_ids: NotRequired[list[int]]
    merges: NotRequired[list[MergeRecord]]
    merge_fallback: NotRequired[MergeFallback | None]
    facts: NotRequired[FactsReport]
    resummarised: NotRequired[list[int]]
    """Topics summarised again because their messages changed (edits, transcripts)."""
    repairs: NotRequired[Annotated[list[Repair], added_repairs]]
    """What was set right in the agents' replies this run (`load_chunk` starts it over)."""
    resummary_fallback: NotRequired[SplitFallback | None]


class SelectedTopic(TypedDict):
    id: int
    reason: str
    excerpt: str | None
    score: float


class SelectedPerson(TypedDict):
    id: int
    reason: str


class UsedTopic(SelectedTopic):
    """A recalled topic as the context showed it."""

    cut: bool
    """Over the topics budget, it was cut to its messages most relevant to the turn."""


class UsedFact(TypedDict):
    id: int
    core: bool
    """A core identity fact of the system prompt, rather than one found for this turn."""


class ContextUsed(TypedDict):
    """What of memory a turn's context held: the answer's sources (seed 003's
    `context_used`), by id, in the order the context showed them."""

    topics: list[UsedTopic]
    people: list[SelectedPerson]
    facts: list[UsedFact]
    """The core facts of the system prompt first, then the ones found for this turn."""
    earlier_messages: list[int]
    """Auto-RAG: messages from earlier in this conversation (row ids)."""
    session_summary: bool
    """Whether the rolling summary of the conversation's older part was included."""


NO_CONTEXT = ContextUsed(topics=[], people=[], facts=[], earlier_messages=[], session_summary=False)


T = TypeVar("T")


def merge_texts(current: dict[int, str], new: dict[int, str]) -> dict[int, str]:
    """Reducer of the media graph's texts: each node adds the texts it found."""
    return {**(current or {}), **new}


def latest(_current: T, new: T) -> T:
    """Reducer of a channel that one node owns: its newest write replaces the old value."""
    return new


class ResponseInput(TypedDict):
    """One user turn as the caller hands it over: the message is already stored."""

    text: str
    message_id: NotRequired[int | None]
    """The stored row of `text`, kept out of the window and auto-RAG; absent or None when the
    caller did not store it (Studio): the graph's first node stores it then."""
    group_message_ids: NotRequired[list[int]]
    """The stored rows of a grouped turn's earlier messages (bot/grouping.py), which `text`
    holds already with the last one: kept out of the window and auto-RAG like it."""
    parts: NotRequired[list[dict]]
    """Media of the message as LangChain content blocks (`{"type": "image"|"audio",
    "base64", "mime_type"}`), sent to the responder with the text."""


# -- the reranker subgraph (seed 001) ----------------------------------------


class TopicPick(TypedDict):
    id: int
    reason: str
    excerpt: str | None


class PersonPick(TypedDict):
    id: int
    reason: str


class RerankAnswer(TypedDict):
    """The model's final JSON, parsed but not yet checked against the candidates."""

    topics: list[TopicPick]
    people: list[PersonPick]
    unknown_ids: NotRequired[int]
    """Ids past 64 bits, left out here: no record has one, and a checkpoint cannot hold it."""


class RerankInput(TypedDict):
    query: str
    """The contextualised search query (the enricher's output, or the raw text)."""
    user_message: str
    """The user's current message(s), verbatim: excerpts answer this, not the query."""
    profile: NotRequired[Annotated[list[str], latest]]
    """Key facts about the user."""
    found: Annotated[Found, latest]
    """What the search found: the reranker chooses among its topics and people (those the
    user's own rows confirm: `prepare` keeps only them)."""


class RerankOutput(TypedDict):
    selected_topics: Annotated[list[SelectedTopic], latest]
    selected_people: Annotated[list[SelectedPerson], latest]
    rerank_fallback: RerankFallback | None
    """Why the model's own choice was not used; None when it was."""
    rerank_dropped_ids: int
    """Ids the model named that were not candidates (hallucinated or foreign)."""
    rerank_llm_calls: int
    selected_by_search_order: bool
    """No model chose the topics, nor asked for any: they are the search order's first
    (`rerank_fallback` says why). The context may then fill the room they leave with the
    other candidates' messages (`nodes.response.rerank_selection.fill_candidates`)."""


class ResponseState(ResponseInput, RerankOutput, total=False):
    """One run of the response graph (the reranker's choice as `RerankOutput`). `assemble`
    resets the responder's conversation and loop counters, so a per-user thread can run
    turn after turn."""

    query: str
    """The search query: the enricher's rewrite, or the raw text."""
    enrich_fallback: EnrichFallback | None
    found: Annotated[Found, latest]
    """What the search found: its queries, candidates and evidence."""
    search_fallback: SearchFallback | None
    """Set when the vector store was down: the candidates are full-text search's alone."""
    repairs: Annotated[list[Repair], added_repairs]
    """What was set right in the agents' replies this turn, agent by agent."""
    session_summary: str | None
    """The rolling summary of the segment's messages before the window, if it needs one."""
    summary_fallback: SummaryFallback | None
    messages: Annotated[list[AnyMessage], add_messages]
    """The responder's conversation: the assembled context, then replies and tool results."""
    context_layers: dict[str, int]
    """Tokens of each context layer that was included, in assembly order."""
    context_tokens: int
    context_used: ContextUsed
    tool_rounds: int
    empty_replies: int
    respond_fallback: RespondFallback | None
    respond_error: str | None
    answer: str
    answered_by: AnsweredBy
    answer_partial: bool
    """The user stopped the answer while it was written; `answer` is what was written."""
    answer_message_id: int | None
    """The stored answer's row (its sources are `answers[answer_message_id]`); None when
    there was nothing to store (stopped before the first word)."""
    sanitized: Annotated[list[str], latest]
    """Artefacts finalize removed from the answer (seed 002's anomaly log)."""


class RerankState(RerankInput, RerankOutput, total=False):
    """One reranker run. `prepare` resets every internal key (`messages` included), so a
    thread can run turn after turn; every other key is overwritten by the node that owns it."""

    repairs: Annotated[list[Repair], added_repairs]
    messages: Annotated[list[AnyMessage], add_messages]
    started_at: float
    """`time.monotonic()` at `prepare`: the start of the shared time budget."""
    requested_ids: Annotated[list[int], latest]
    """Topic ids the model asked to load, in the order asked, across all tool calls."""
    tool_calls: int
    """Model replies that called the tool (parallel calls in one reply count once)."""
    answer: RerankAnswer


class MediaItem(TypedDict):
    """A voice message, an audio file or a photo of a stored message, downloaded."""

    message_id: int
    kind: Literal["audio", "image"]
    name: str
    mime_type: str
    base64: str
    label: str
    """What the message stores on arrival: the media's label and the caption."""


class MediaInput(TypedDict):
    items: list[MediaItem]


class MediaState(MediaInput, total=False):
    """One run of the media graph: each item's text (transcript or description) by
    message id, and the fallbacks taken."""

    texts: Annotated[dict[int, str], merge_texts]
    untranscribed: Annotated[list[int], latest]
    """Audio items the transcription endpoint did not transcribe (their message ids)."""
    transcribe_fallback: TranscribeFallback | None
    describe_fallback: DescribeFallback | None
    repairs: Annotated[list[Repair], added_repairs]
    saved: list[int]
    """The messages whose stored text now holds their transcript or description."""


TaskKind = Literal["reminder", "work"]


class TaskInput(TypedDict):
    task_id: int
    request: str


class TaskState(TaskInput, total=False):
    """One run of a scheduled task: what it is, the Tasker's conversation (its prompt, its
    tool calls and their results), the message to send and the fallback taken (None when
    the model wrote it, or a reminder needed none)."""

    kind: TaskKind
    messages: Annotated[list[AnyMessage], add_messages]
    """The Tasker's prompt (system: rules, core facts, the run's time; user: previous runs
    and the request), then its tool calls and their results."""
    tool_rounds: int
    core_facts: list[int]
    """The ids of the core facts the system prompt holds."""
    message: str
    task_fallback: TaskFallback | None
