"""The response graph: one user turn, from the stored message to the stored answer.

    store_question → enrich ─query→ search → rerank (subgraph) → summarise ─summary→ assemble
                       └─fallback→ raw_query ┘                └─fallback→ extractive_summary ┘
    assemble → respond
    respond ─tool_calls→ tools ─continue→ respond
                         tools ─tool_budget_spent→ synthesize (the tools switched off)
    respond, synthesize ─answer→ finalize → END
    respond, synthesize ─retry_empty→ themselves (one retry of an empty reply)
    respond, synthesize ─fallback→ offline_answer → finalize

`store_question` stores the message first when the caller has not (Studio, the SDK).
A fallback edge is taken on no_model / api_error / timeout / empty_reply, its reason
kept in state: the raw text as the query, the search order (inside the reranker
subgraph), the extractive session summary, and the memory-only answer
(`offline_answer`), which is a real mode, not a stub: it runs whenever no responder
model is configured or the model fails, and quotes what was recalled.
`build_retrieval_graph` is the part up to the choice of topics, which the evaluation
measures.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from core.context import ResponseContext
from core.deps import Deps
from core.fallbacks import TextFallback, edge_label
from core.retry import STORAGE_RETRY
from core.state import ResponseInput, ResponseState
from graphs.agent_step import Step, add_agent_step
from graphs.reranker import build_reranker_graph
from nodes.response.assemble import make_assemble
from nodes.response.enrich import make_enrich, raw_query
from nodes.response.finalize import make_finalize
from nodes.response.offline_answer import make_offline_answer
from nodes.response.reranker import make_rerank
from nodes.response.respond import make_respond, make_synthesize, route_after_tools
from nodes.response.search import make_search
from nodes.response.session_summary import make_extractive_summary, make_summarise
from nodes.response.store_question import make_store_question
from nodes.response.tools import make_response_tools

TEXT_FALLBACK = edge_label(TextFallback)


def add_retrieval(builder: StateGraph, deps: Deps, *, after: str = START) -> None:
    """`enrich → search → rerank` after `after`, the Enricher's fallback edge included."""
    reranker = build_reranker_graph(deps).compile(name="reranker")
    add_agent_step(
        builder,
        Step("enrich", make_enrich(deps)),
        Step("raw_query", raw_query),
        then=("search", "query"),
        reasons=TEXT_FALLBACK,
    )
    builder.add_node("search", make_search(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("rerank", make_rerank(reranker))
    builder.add_edge(after, "enrich")
    builder.add_edge("search", "rerank")


def build_retrieval_graph(deps: Deps) -> StateGraph:
    """The response graph up to the choice of topics (what `topica eval` measures)."""
    builder = StateGraph(ResponseState, input_schema=ResponseInput, context_schema=ResponseContext)
    add_retrieval(builder, deps)
    builder.add_edge("rerank", END)
    return builder


def build_response_graph(deps: Deps) -> StateGraph:
    tools = make_response_tools(deps)
    builder = StateGraph(ResponseState, input_schema=ResponseInput, context_schema=ResponseContext)
    builder.add_node("store_question", make_store_question(deps), retry_policy=STORAGE_RETRY)
    builder.add_edge(START, "store_question")
    add_retrieval(builder, deps, after="store_question")
    add_agent_step(
        builder,
        Step("summarise", make_summarise(deps), STORAGE_RETRY),
        Step("extractive_summary", make_extractive_summary(deps), STORAGE_RETRY),
        then=("assemble", "summary"),
        reasons=TEXT_FALLBACK,
    )
    builder.add_node("assemble", make_assemble(deps), retry_policy=STORAGE_RETRY)
    answer_edges = {
        "finalize": "answer",
        "offline_answer": TEXT_FALLBACK,
    }
    builder.add_node(
        "respond",
        make_respond(deps, tools),
        destinations={**answer_edges, "tools": "tool_calls", "respond": "retry_empty"},
    )
    builder.add_node("tools", ToolNode(tools))
    builder.add_node(
        "synthesize",
        make_synthesize(deps),
        destinations={**answer_edges, "synthesize": "retry_empty"},
    )
    builder.add_node("offline_answer", make_offline_answer(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("finalize", make_finalize(deps), retry_policy=STORAGE_RETRY)

    builder.add_edge("rerank", "summarise")
    builder.add_edge("assemble", "respond")
    builder.add_conditional_edges(
        "tools", route_after_tools, {"continue": "respond", "tool_budget_spent": "synthesize"}
    )
    builder.add_edge("offline_answer", "finalize")
    builder.add_edge("finalize", END)
    return builder
