"""The memory graph: one chunk of a user's unarchived messages becomes topics.

load_chunk → split (Splitter agent) ─┬→ validate → embed → save → merge → extract_facts
                     └→ segment ────┘
`split` takes the `segment` edge when no splitter model is configured or the
model fails; either way `validate` guarantees every message lands in exactly
one topic. A run with no ready chunk goes straight to `extract_facts` when topics still
wait for their facts (and an archivist is configured), else it ends.
"""

from __future__ import annotations

import sqlite3

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.state import MemoryInput, MemoryState
from nodes.archiving import make_embed, make_save
from nodes.archivist import make_extract_facts
from nodes.chunking import make_load_chunk, route_after_load
from nodes.coverage import make_validate
from nodes.merging import make_merge
from nodes.splitter import make_segment, make_split

# Transient store or embedding-endpoint failures (a locked database, a Chroma
# server restarting) are retried; the nodes are idempotent.
STORAGE_RETRY = RetryPolicy(
    max_attempts=3,
    initial_interval=0.5,
    backoff_factor=2.0,
    retry_on=(sqlite3.OperationalError, ConnectionError),
)


def build_memory_graph(deps: Deps) -> StateGraph:
    builder = StateGraph(MemoryState, input_schema=MemoryInput, context_schema=MemoryContext)
    builder.add_node("load_chunk", make_load_chunk(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("split", make_split(deps), destinations=("validate", "segment"))
    builder.add_node("segment", make_segment(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("validate", make_validate())
    builder.add_node("embed", make_embed(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("save", make_save(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("merge", make_merge(deps), retry_policy=STORAGE_RETRY)
    builder.add_node("extract_facts", make_extract_facts(deps), retry_policy=STORAGE_RETRY)

    builder.add_edge(START, "load_chunk")
    builder.add_conditional_edges("load_chunk", route_after_load, ["split", "extract_facts", END])
    builder.add_edge("segment", "validate")
    builder.add_edge("validate", "embed")
    builder.add_edge("embed", "save")
    builder.add_edge("save", "merge")
    builder.add_edge("merge", "extract_facts")
    builder.add_edge("extract_facts", END)
    return builder
