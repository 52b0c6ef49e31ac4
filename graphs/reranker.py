"""The reranker subgraph (seed 001): the agentic choice of topics and people for one turn.

    prepare ──ask_model──→ request_content ──tool_call──→ load_content ⇄ choose ──answer──→ finish
      │                       │                                          │
      │ no_model              │ api_error                                │ invalid_json
      │ no_candidates         │ timeout_before_tool                      │ tool_call_limit
      │                       │ protocol_violation                       │ timeout_after_tool
      ↓                       ↓                                          │ api_error
    vector_fallback ←─────────┘                                          ↓
                                                                requested_fallback

Turn 1 forces `get_topics_content` (tool_choice, no response_format); turn 2 asks for
JSON (response_format json_object) with the tool results in the conversation and may call
the tool again up to `rerank_max_tool_calls`. Every row of the seed's fallback table is a
labelled edge to a named fallback node, which records its reason in `rerank_fallback`:
before the model has asked for content the vector order wins, after it the ids it asked
for. The whole subgraph shares one `rerank_timeout_s` budget, measured from `prepare`.

The response graph calls the compiled subgraph from its `rerank` node, mapping its own
state onto `RerankInput` and reading back `RerankOutput`.
"""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import RetryPolicy
from typing_extensions import TypedDict

from graphs.context import ResponseContext
from graphs.deps import Deps
from graphs.state import (
    PersonCandidate,
    SelectedPerson,
    SelectedTopic,
    TopicCandidate,
    latest,
)

FallbackReason = Literal[
    "no_model",
    "no_candidates",
    "api_error",
    "timeout_before_tool",
    "timeout_after_tool",
    "invalid_json",
    "tool_call_limit",
    "protocol_violation",
]


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


class RerankInput(TypedDict):
    query: str
    """The contextualised search query (the enricher's output, or the raw text)."""
    user_message: str
    """The user's current message(s), verbatim: excerpts answer this, not the query."""
    profile: NotRequired[Annotated[list[str], latest]]
    """Key facts about the user."""
    candidates: Annotated[list[TopicCandidate], latest]
    """Topic candidates from hybrid search, best fused score first."""
    people_candidates: NotRequired[Annotated[list[PersonCandidate], latest]]


class RerankOutput(TypedDict):
    selected_topics: Annotated[list[SelectedTopic], latest]
    selected_people: Annotated[list[SelectedPerson], latest]
    rerank_fallback: FallbackReason | None
    """Why the model's own choice was not used; None when it was."""
    rerank_dropped_ids: int
    """Ids the model named that were not candidates (hallucinated or foreign)."""
    rerank_llm_calls: int


class RerankState(RerankInput, RerankOutput, total=False):
    """One reranker run. `prepare` resets every internal key (`messages` included), so a
    thread can run turn after turn; every other key is overwritten by the node that owns it."""

    messages: Annotated[list[AnyMessage], add_messages]
    started_at: float
    """`time.monotonic()` at `prepare`: the start of the shared time budget."""
    requested_ids: Annotated[list[int], latest]
    """Topic ids the model asked to load, in the order asked, across all tool calls."""
    tool_calls: int
    """Model replies that called the tool (parallel calls in one reply count once)."""
    answer: RerankAnswer


# Reading topics is a local SQLite query; a locked database is worth another try.
STORAGE_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.2, backoff_factor=2.0)


def build_reranker_graph(deps: Deps) -> StateGraph:
    # The node module imports this module's state types, so it is imported here, not on top.
    from nodes.reranker import (
        finish,
        make_choose,
        make_prepare,
        make_request_content,
        requested_fallback,
        vector_fallback,
    )
    from nodes.topic_content import make_get_topics_content_tool

    content_tool = make_get_topics_content_tool(deps)
    builder = StateGraph(
        RerankState,
        input_schema=RerankInput,
        output_schema=RerankOutput,
        context_schema=ResponseContext,
    )
    # `destinations` labels name every fallback row on its edge, for Studio and the
    # topology test; the nodes route with `Command`.
    builder.add_node(
        "prepare",
        make_prepare(deps),
        destinations={
            "request_content": "ask_model",
            "vector_fallback": "no_model / no_candidates",
        },
    )
    builder.add_node(
        "request_content",
        make_request_content(deps, content_tool),
        destinations={
            "load_content": "tool_call",
            "vector_fallback": "api_error / timeout_before_tool / protocol_violation",
        },
    )
    builder.add_node("load_content", ToolNode([content_tool]), retry_policy=STORAGE_RETRY)
    builder.add_node(
        "choose",
        make_choose(deps, content_tool),
        destinations={
            "finish": "answer",
            "load_content": "tool_call",
            "requested_fallback": (
                "invalid_json / tool_call_limit / timeout_after_tool / api_error"
            ),
        },
    )
    builder.add_node("finish", finish)
    builder.add_node("vector_fallback", vector_fallback)
    builder.add_node("requested_fallback", requested_fallback)

    builder.add_edge(START, "prepare")
    builder.add_edge("load_content", "choose")
    builder.add_edge("finish", END)
    builder.add_edge("vector_fallback", END)
    builder.add_edge("requested_fallback", END)
    return builder
