"""Run configuration shared by every graph invocation (thread ids, trace metadata) and
the application spans around them.

LangSmith tracing switches on when `LANGSMITH_TRACING` (with `LANGSMITH_API_KEY`,
optionally `LANGSMITH_ENDPOINT` and `LANGSMITH_PROJECT`) is set, and nothing connects
anywhere otherwise. Graph runs are traced by LangChain's callbacks; `traced` wraps an
application service (an ingest, a turn) in a LangSmith span of its own, so storing,
archiving and the graph runs it starts read as one trace. Traces and checkpoint threads
name users only by a salted hash, never by their Telegram id; LangGraph adds the node
name (`langgraph_node`) itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langsmith import traceable

from core.logs import user_key
from core.metrics import GRAPH_METRICS

__all__ = ["run_config", "traced", "user_key"]


F = TypeVar("F", bound=Callable[..., Any])


def traced(name: str) -> Callable[[F], F]:
    """A LangSmith span named `name` around an application service taking `user_id`.

    Only the user's pseudonym is recorded: the service's arguments (messages, ids,
    services) and its result stay out of the trace.
    """

    def inputs(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"user": user_key(arguments["user_id"])}

    def outputs(_result: Any) -> dict[str, Any]:
        return {}

    return traceable(name=name, run_type="chain", process_inputs=inputs, process_outputs=outputs)


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
