"""Run configuration shared by every graph invocation: thread ids and trace metadata.

LangSmith tracing is LangChain's own: it switches on when `LANGSMITH_TRACING`
(with `LANGSMITH_API_KEY`, optionally `LANGSMITH_ENDPOINT` and
`LANGSMITH_PROJECT`) is set, and nothing connects anywhere otherwise. Traces
and checkpoint threads name users only by a salted hash, never by their
Telegram id; LangGraph adds the node name (`langgraph_node`) itself.
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.runnables import RunnableConfig

from core.metrics import GRAPH_METRICS

_SALT = "topica-user:"


def user_key(user_id: int) -> str:
    """A stable pseudonym for a user id, safe to put in traces and thread ids."""
    return hashlib.sha256(f"{_SALT}{user_id}".encode()).hexdigest()[:16]


def run_config(graph: str, user_id: int, **metadata: Any) -> RunnableConfig:
    key = user_key(user_id)
    return RunnableConfig(
        configurable={"thread_id": f"{graph}-{key}"},
        metadata={"graph": graph, "user": key, **metadata},
        tags=[f"graph:{graph}"],
        callbacks=[GRAPH_METRICS],
        run_name=graph,
        recursion_limit=50,
    )
