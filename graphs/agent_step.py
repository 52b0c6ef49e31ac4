"""An agent's step in a graph: the agent's node and the node of its non-LLM path.

The agent routes with `Command`, on to the next node or to its fallback node, and the
fallback node goes on to that same next node; both of the agent's edges are labelled, so
Studio draws them and the topology snapshots pin them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from langgraph.graph import StateGraph
from langgraph.types import RetryPolicy


class Step(NamedTuple):
    """One node of an agent step: its name, what it runs, its retry policy (None: none)."""

    name: str
    node: Any
    retry_policy: RetryPolicy | None = None


def add_agent_step(
    builder: StateGraph, agent: Step, fallback: Step, *, then: tuple[str, str], reasons: str
) -> None:
    """Adds `agent`, which goes on to `then` (a node and its edge's label) or falls back to
    `fallback` (the edge labelled `reasons`), and `fallback`, which goes on to that node."""
    following, label = then
    builder.add_node(
        agent.name,
        agent.node,
        destinations={following: label, fallback.name: reasons},
        retry_policy=agent.retry_policy,
    )
    builder.add_node(fallback.name, fallback.node, retry_policy=fallback.retry_policy)
    builder.add_edge(fallback.name, following)
