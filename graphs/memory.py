"""The memory graph: one chunk of a user's unarchived messages becomes topics.

    START → resummarise ─(Splitter agent)→ load_chunk
              └─no_model / api_error / …→ resummarise_extractive ┘
    load_chunk ─chunk→ split ─(Splitter agent)─────────────────→ validate → embed → save
         │               └─no_model / api_error / timeout / invalid_output→ segment ┘
         │                                                                        │
         │   save → merge ─(Merger agent)────────────────────────────→ extract_facts
         │            └─no_model / api_error / …→ merge_by_rule ──────┘    │
         └─facts_pending→ extract_facts ─(Archivist agent)→ END            │
                                └─no_model / api_error / …→ defer_facts → END

First, topics whose messages changed since they were summarised (edits, transcripts) are
summarised again. Every agent's non-LLM path is a labelled edge: the embedding segmentation, the
similarity rule, and deferring fact extraction (facts are never invented). `validate`
guarantees every message lands in exactly one topic whichever splitter ran. A run with
no ready chunk goes straight to `extract_facts` when topics still wait for their facts
(and an archivist is configured), else it ends.
"""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from core.context import MemoryContext
from core.deps import Deps
from core.fallbacks import AgentFallbackReason, edge_label
from core.retry import STORAGE_RETRY
from core.state import MemoryInput, MemoryState
from graphs.agent_step import Step, add_agent_step
from nodes.memory.chunking import make_load_chunk, route_after_load
from nodes.memory.coverage import make_validate
from nodes.memory.facts import make_defer_facts, make_extract_facts
from nodes.memory.merging import make_merge, make_merge_by_rule
from nodes.memory.resummary import make_resummarise, make_resummarise_extractive
from nodes.memory.splitter import make_segment, make_split
from nodes.memory.topics import make_embed, make_save

AGENT_FALLBACK = edge_label(AgentFallbackReason)


def build_memory_graph(deps: Deps) -> StateGraph:
    builder = StateGraph(MemoryState, input_schema=MemoryInput, context_schema=MemoryContext)
    agent_step = partial(add_agent_step, builder, reasons=AGENT_FALLBACK)
    agent_step(
        Step("resummarise", make_resummarise(deps), STORAGE_RETRY),
        Step("resummarise_extractive", make_resummarise_extractive(deps), STORAGE_RETRY),
        then=("load_chunk", "summaries"),
    )
    builder.add_node("load_chunk", make_load_chunk(deps), retry_policy=STORAGE_RETRY)
    agent_step(
        Step("split", make_split(deps)),
        Step("segment", make_segment(deps), STORAGE_RETRY),
        then=("validate", "topics"),
    )
    builder.add_node("validate", make_validate())
    builder.add_node("embed", make_embed(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("save", make_save(deps), retry_policy=STORAGE_RETRY)
    agent_step(
        Step("merge", make_merge(deps), STORAGE_RETRY),
        Step("merge_by_rule", make_merge_by_rule(deps), STORAGE_RETRY),
        then=("extract_facts", "merged"),
    )
    agent_step(
        Step("extract_facts", make_extract_facts(deps), STORAGE_RETRY),
        Step("defer_facts", make_defer_facts(deps), STORAGE_RETRY),
        then=(END, "facts"),
    )

    builder.add_edge(START, "resummarise")
    builder.add_conditional_edges("load_chunk", route_after_load, ["split", "extract_facts", END])
    builder.add_edge("validate", "embed")
    builder.add_edge("embed", "save")
    builder.add_edge("save", "merge")
    return builder
