"""Topology snapshot of the memory graph: a removed or rewired edge (the `segment`
fallback above all) fails here rather than silently in production."""

from __future__ import annotations

import re

from graphs.deps import Deps
from graphs.memory import build_memory_graph
from nodes.chunking import route_after_load

EDGE = re.compile(r"^\s*(\S+) (-->|-\.->) (\S+);$")

# (source, "solid" | "conditional", target)
EXPECTED_EDGES = {
    ("__start__", "solid", "load_chunk"),
    ("load_chunk", "conditional", "split"),
    ("load_chunk", "conditional", "__end__"),
    ("load_chunk", "conditional", "extract_facts"),
    ("split", "conditional", "validate"),
    ("split", "conditional", "segment"),
    ("segment", "solid", "validate"),
    ("validate", "solid", "embed"),
    ("embed", "solid", "save"),
    ("save", "solid", "merge"),
    ("merge", "solid", "extract_facts"),
    ("extract_facts", "solid", "__end__"),
}


def mermaid_edges(mermaid: str) -> set[tuple[str, str, str]]:
    edges = set()
    for line in mermaid.splitlines():
        match = EDGE.match(line)
        if match:
            source, arrow, target = match.groups()
            edges.add((source, "solid" if arrow == "-->" else "conditional", target))
    return edges


def test_the_memory_graph_has_exactly_the_expected_edges(deps: Deps):
    mermaid = build_memory_graph(deps).compile().get_graph(xray=True).draw_mermaid()
    assert mermaid_edges(mermaid) == EXPECTED_EDGES


def test_the_memory_graph_has_exactly_the_expected_nodes(deps: Deps):
    graph = build_memory_graph(deps).compile().get_graph(xray=True)
    assert set(graph.nodes) == {
        "__start__",
        "load_chunk",
        "split",
        "segment",
        "validate",
        "embed",
        "save",
        "merge",
        "extract_facts",
        "__end__",
    }


def test_the_edge_parser_sees_both_kinds_of_arrow():
    sample = "graph TD;\n\ta --> b;\n\tb -.-> c;\n\tclassDef x fill:#fff\n"
    assert mermaid_edges(sample) == {("a", "solid", "b"), ("b", "conditional", "c")}


def test_the_router_after_load_chunk_is_pure_and_total():
    assert route_after_load({"chunk": [{"id": 1}]}) == "split"
    assert route_after_load({"chunk": []}) == "__end__"
    assert route_after_load({}) == "__end__"
    assert route_after_load({"chunk": [], "facts_pending": True}) == "extract_facts"
    assert route_after_load({"chunk": [{"id": 1}], "facts_pending": True}) == "split"
