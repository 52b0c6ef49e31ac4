"""A graph's edges as its Mermaid drawing shows them, and expected edges written the same
way, for the topology snapshot tests."""

from __future__ import annotations

import re

from langgraph.graph import StateGraph

Edge = tuple[str, str | None, str]
"""(source, label: None for a plain edge, "" for an unlabelled conditional one, target)"""

DRAWN = re.compile(r"^\s*(\S+) (?:-->|-\.->|-\. &nbsp;(.+?)&nbsp; \.->) (\S+);$")
WRITTEN = re.compile(r"^(\S+) (?:-->|-\.->|-\. (.+?) \.->) (\S+)$")


def mermaid_edges(mermaid: str) -> set[Edge]:
    """The edges of a Mermaid drawing."""
    edges = set()
    for line in mermaid.splitlines():
        match = DRAWN.match(line)
        if match:
            source, label, target = match.groups()
            plain = "-.->" not in line and "&nbsp;" not in line
            edges.add((source, None if plain else (label or ""), target))
    return edges


def drawn_edges(graph: StateGraph) -> set[Edge]:
    """The edges of `graph` as Studio draws it, its subgraphs inside."""
    return mermaid_edges(graph.compile().get_graph(xray=True).draw_mermaid())


def edges(written: str) -> set[Edge]:
    """Edges written one a line as Mermaid writes them, without its padding: `a --> b`
    (plain), `a -.-> b` (conditional, unlabelled), `a -. label .-> b` (labelled)."""
    found = set()
    for line in filter(None, (line.strip() for line in written.splitlines())):
        match = WRITTEN.match(line)
        assert match, f"not an edge: {line!r}"
        source, label, target = match.groups()
        found.add((source, None if "-->" in line else (label or ""), target))
    return found
