"""Why an agent's own answer was not used: the typed reasons every fallback edge carries.

Every LLM step has a deterministic non-LLM path (DESIGN.md). When a run takes it, the
node routes to that path along a labelled edge and records one of these reasons in the
graph state, so Studio, traces, `--json` outputs and metrics all say which path a run
took and why. `AgentFallback` is what `nodes.shared.agent.call_agent` returns instead of
a reply: the reason plus a short detail for the logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

AgentFallbackReason = Literal["no_model", "api_error", "timeout", "invalid_output", "empty_reply"]
"""Why one agent call produced no usable reply:

- `no_model`: no chat model is configured for the agent;
- `api_error`: the provider failed (HTTP error, dropped connection, refused request);
- `timeout`: the call ran out of time;
- `invalid_output`: the model answered, but not in the shape asked for (JSON that does not
  parse or validate, a reply without the required tool call, a reply cut at its token
  limit);
- `empty_reply`: the model answered with nothing usable.
"""

TextFallback = Literal["no_model", "api_error", "timeout", "empty_reply"]
"""Why an agent asked for plain text produced none (it has no shape to get wrong)."""

SplitFallback = AgentFallbackReason
"""The Splitter's: the embedding segmentation takes over."""

EnrichFallback = TextFallback
"""The Enricher's: the user's raw text is the search query."""

MergeFallback = AgentFallbackReason
"""The Merger's: the similarity rule decides the remaining merges."""

SummaryFallback = TextFallback
"""The Summariser's: the extractive session summary stands in."""

FactsFallback = AgentFallbackReason
"""The Archivist's: facts are not extracted (never invented); the topics wait for a later
run with a working model."""

RespondFallback = TextFallback
"""The Responder's: the memory-only answer quotes what was recalled."""

TaskFallback = TextFallback
"""The Tasker's: the run's message is the request itself, saying a model is needed."""

SearchFallback = Literal["vectors_unavailable"]
"""The search's: the vector store is down, so full-text search alone found the candidates
(the hybrid search degrades; the turn's message is embedded later from the queue)."""

TranscribeFallback = Literal["no_endpoint", "api_error", "timeout", "invalid_output", "empty_reply"]
"""The transcription endpoint's: the multimodal describer transcribes instead.
`no_endpoint`: no `TOPICA_TRANSCRIPTION_BASE_URL` is set; `invalid_output`: a reply that
is not the JSON object `{"text": "..."}`."""

DescribeFallback = TextFallback
"""The Describer's (a transcript or a photo description): the media's label stays the
message's only text."""

RerankFallback = Literal[
    "no_model",
    "no_candidates",
    "disabled",
    "unforced_call",
    "api_error",
    "timeout_before_tool",
    "timeout_after_tool",
    "invalid_json",
    "tool_call_limit",
    "protocol_violation",
]
"""The Reranker's, one per row of seed 001's fallback table: before the model asked for
content the search order decides, after it the ids it asked for. `disabled`: the
reranker is switched off (`TOPICA_RERANKER_ENABLED=false`) and the search order decides;
`unforced_call`: the endpoint honours neither a named nor a `required` tool choice, so its
first turn's call cannot be forced and the search order decides without asking."""


@dataclass(frozen=True)
class AgentFallback:
    """An agent call that produced no usable reply: why, and a short detail for the logs."""

    reason: AgentFallbackReason
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


def edge_label(reasons: Any) -> str:
    """The label of a fallback edge in the graph drawing: the reasons of a `Literal` type."""
    return " / ".join(get_args(reasons))
