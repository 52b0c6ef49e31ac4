"""The response graph: one user turn, from the stored message to the stored answer.

    enrich → search → rerank (the reranker subgraph) → assemble → respond
    respond ─tool_calls→ tools ─continue→ respond
                         tools ─tool_budget_spent→ synthesize (the tools switched off)
    respond, synthesize ─answer→ finalize → END
    respond, synthesize ─retry_empty→ themselves (one retry of an empty reply)
    respond, synthesize ─fallback→ offline_answer → finalize
                          (no responder model, a provider error, a second empty reply)

The memory-only answer (`offline_answer`) is a real mode, not a stub: it runs whenever
no responder model is configured or the model fails, and quotes what was recalled.
"""

from __future__ import annotations

import asyncio

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from graphs.context import ResponseContext
from graphs.deps import Deps
from graphs.metrics import (
    RERANKER_CANDIDATES_IN,
    RERANKER_CANDIDATES_OUT,
    RERANKER_FALLBACKS,
    RERANKER_SELECTED,
)
from graphs.reranker import RerankInput, build_reranker_graph
from graphs.state import ResponseInput, ResponseState
from nodes.assemble import make_assemble
from nodes.enrich import make_enrich
from nodes.finalize import make_finalize
from nodes.offline_answer import make_offline_answer
from nodes.respond import (
    make_respond,
    make_synthesize,
    route_after_respond,
    route_after_synthesis,
    route_after_tools,
)
from nodes.search import make_search
from nodes.tools import make_response_tools

# A locked database or a Chroma server restarting is worth another try; these nodes
# only read, or write idempotently (the answer's id is tied to the question's).
STORAGE_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.2, backoff_factor=2.0)


def make_rerank(deps: Deps, reranker: CompiledStateGraph):
    """Run the reranker subgraph on this turn's candidates: its own state, mapped explicitly."""

    async def rerank(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        core_facts = await asyncio.to_thread(deps.store.core_facts, runtime.context.user_id)
        request = RerankInput(
            query=state["query"],
            user_message=state["text"],
            profile=[fact["content"] for fact in core_facts],
            candidates=state.get("candidates") or [],
            people_candidates=state.get("people_candidates") or [],
        )
        result = await reranker.ainvoke(request, context=runtime.context)
        RERANKER_CANDIDATES_IN.observe(len(request["candidates"]))
        RERANKER_CANDIDATES_OUT.observe(len(result["selected_topics"]))
        RERANKER_SELECTED.observe(len(result["selected_topics"]))
        if result["rerank_fallback"]:
            RERANKER_FALLBACKS.labels(reason=result["rerank_fallback"]).inc()
        return {
            "selected_topics": result["selected_topics"],
            "selected_people": result["selected_people"],
            "rerank_fallback": result["rerank_fallback"],
            "rerank_dropped_ids": result["rerank_dropped_ids"],
            "rerank_llm_calls": result["rerank_llm_calls"],
        }

    return rerank


def build_response_graph(deps: Deps) -> StateGraph:
    tools = make_response_tools(deps)
    reranker = build_reranker_graph(deps).compile(name="reranker")
    builder = StateGraph(ResponseState, input_schema=ResponseInput, context_schema=ResponseContext)
    builder.add_node("enrich", make_enrich(deps))
    builder.add_node("search", make_search(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("rerank", make_rerank(deps, reranker))
    builder.add_node("assemble", make_assemble(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("respond", make_respond(deps, tools))
    builder.add_node("tools", ToolNode(tools))
    builder.add_node("synthesize", make_synthesize(deps))
    builder.add_node("offline_answer", make_offline_answer(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("finalize", make_finalize(deps), retry_policy=STORAGE_RETRY)

    builder.add_edge(START, "enrich")
    builder.add_edge("enrich", "search")
    builder.add_edge("search", "rerank")
    builder.add_edge("rerank", "assemble")
    builder.add_edge("assemble", "respond")
    builder.add_conditional_edges(
        "respond",
        route_after_respond,
        {
            "tool_calls": "tools",
            "retry_empty": "respond",
            "fallback": "offline_answer",
            "answer": "finalize",
        },
    )
    builder.add_conditional_edges(
        "tools", route_after_tools, {"continue": "respond", "tool_budget_spent": "synthesize"}
    )
    builder.add_conditional_edges(
        "synthesize",
        route_after_synthesis,
        {"retry_empty": "synthesize", "fallback": "offline_answer", "answer": "finalize"},
    )
    builder.add_edge("offline_answer", "finalize")
    builder.add_edge("finalize", END)
    return builder
