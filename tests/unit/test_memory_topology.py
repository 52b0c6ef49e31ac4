"""Topology snapshot of the memory graph: a removed or rewired edge (the `segment`
fallback above all) fails here rather than silently in production."""

from __future__ import annotations

from core.deps import Deps
from graphs.memory import build_memory_graph
from nodes.memory.chunking import route_after_load
from tests.support.memory import MEMORY_NODES
from tests.support.topology import drawn_edges, edges, mermaid_edges

FALLBACK = "no_model / api_error / timeout / invalid_output / empty_reply"

EXPECTED_EDGES = edges(f"""
    __start__ --> resummarise
    resummarise -. summaries .-> load_chunk
    resummarise -. {FALLBACK} .-> resummarise_extractive
    resummarise_extractive --> load_chunk
    load_chunk -.-> split
    load_chunk -.-> __end__
    load_chunk -.-> extract_facts
    split -. topics .-> validate
    split -. {FALLBACK} .-> segment
    segment --> validate
    validate --> embed
    embed --> save
    save --> merge
    merge -. merged .-> extract_facts
    merge -. {FALLBACK} .-> merge_by_rule
    merge_by_rule --> extract_facts
    extract_facts -. facts .-> __end__
    extract_facts -. {FALLBACK} .-> defer_facts
    defer_facts --> __end__
""")


def test_the_memory_graph_has_exactly_the_expected_edges(deps: Deps):
    assert drawn_edges(build_memory_graph(deps)) == EXPECTED_EDGES


def test_the_memory_graph_has_exactly_the_expected_nodes(deps: Deps):
    graph = build_memory_graph(deps).compile().get_graph(xray=True)
    assert set(graph.nodes) == {"__start__", *MEMORY_NODES, "resummarise_extractive", "__end__"}


def test_the_edge_parser_sees_every_kind_of_arrow():
    sample = "graph TD;\n\ta --> b;\n\tb -.-> c;\n\tc -. &nbsp;x / y&nbsp; .-> d;\n\tclassDef x\n"
    expected = {("a", None, "b"), ("b", "", "c"), ("c", "x / y", "d")}
    assert mermaid_edges(sample) == expected
    assert edges("a --> b\n  b -.-> c\n  c -. x / y .-> d\n") == expected


def test_the_router_after_load_chunk_is_pure_and_total():
    assert route_after_load({"chunk": [{"id": 1}]}) == "split"
    assert route_after_load({"chunk": []}) == "__end__"
    assert route_after_load({}) == "__end__"
    assert route_after_load({"chunk": [], "facts_pending": True}) == "extract_facts"
    assert route_after_load({"chunk": [{"id": 1}], "facts_pending": True}) == "split"
