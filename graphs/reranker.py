"""The reranker subgraph (seed 001): the agentic choice of topics and people for one turn.

    prepare ──ask_model──→ request_content ──tool_call──→ load_content ⇄ choose ──answer──→ finish
      │                       │                                          │
      │ no_model              │ api_error                                │ invalid_json
      │ no_candidates         │ timeout_before_tool                      │ tool_call_limit
      │ disabled              │ protocol_violation                       │ timeout_after_tool
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

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from core.context import ResponseContext
from core.deps import Deps
from core.retry import STORAGE_RETRY
from core.state import RerankInput, RerankOutput, RerankState
from nodes.response.reranker import (
    finish,
    make_choose,
    make_prepare,
    make_request_content,
    requested_fallback,
    vector_fallback,
)
from nodes.response.topic_content import make_get_topics_content_tool


def build_reranker_graph(deps: Deps) -> StateGraph:
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
            "vector_fallback": "no_model / no_candidates / disabled",
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
