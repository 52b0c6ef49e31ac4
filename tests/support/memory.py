"""Reading what the memory graph did: the nodes a run went through and the topics it left."""

from __future__ import annotations

from core.context import MemoryContext
from core.deps import Deps
from graphs.memory import build_memory_graph
from tests.support.messages import ids

MEMORY_NODES = (
    "resummarise",
    "load_chunk",
    "split",
    "segment",
    "validate",
    "embed",
    "save",
    "merge",
    "merge_by_rule",
    "extract_facts",
    "defer_facts",
)
"""Every node of the memory graph, in the order of a run that takes every fallback edge
(when no topic waits to be summarised again: then `resummarise_extractive` too)."""


async def node_path(deps: Deps, user_id: int) -> list[str]:
    """The nodes one memory-graph run goes through, in order."""
    graph = build_memory_graph(deps).compile()
    context = MemoryContext(user_id=user_id, archive_all=True)
    path = []
    async for update in graph.astream({"chunk": []}, context=context, stream_mode="updates"):
        path.extend(update)
    return path


def memberships(deps: Deps, user_id: int, key: str = "summary") -> list[tuple[object, list[int]]]:
    """Each of the user's topics (its `key` column: the summary, or `"id"`) with the ids of
    its messages, in topic order."""
    return [
        (topic[key], ids(deps.store.messages.of_topic(user_id, topic["id"])))
        for topic in deps.store.topics.all_of(user_id)
    ]
