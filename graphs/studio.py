"""The compiled graphs `langgraph.json` exports, for `langgraph dev` and LangGraph Studio.

Compiled without a checkpointer (the LangGraph server brings its own) over
services built from the environment's settings (`TOPICA_DATA_DIR` and the
rest; `langgraph.json` loads `.env` into that environment). Only the LangGraph
server imports this module; the CLI and the bot compile the builders themselves
with a durable checkpointer.

In Studio, set the run's context (user id, limits) in the assistant's
configuration; the response graph's input is just the user's text. The server
builds the context from JSON, so each graph takes the checked context type: a
run without a `user_id`, or with a field of the wrong type, fails with a sentence
saying so in the run's output (not a `TypeError` in the server's log).
"""

from __future__ import annotations

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from core.context import checked
from graphs.memory import build_memory_graph
from graphs.reranker import build_reranker_graph
from graphs.response import build_response_graph
from graphs.tasks import build_task_graph
from stores.services import default_deps


def for_studio(builder: StateGraph, name: str) -> CompiledStateGraph:
    builder.context_schema = checked(builder.context_schema)
    return builder.compile(name=name)


_deps = default_deps()

response = for_studio(build_response_graph(_deps), "response")
memory = for_studio(build_memory_graph(_deps), "memory")
reranker = for_studio(build_reranker_graph(_deps), "reranker")
tasks = for_studio(build_task_graph(_deps), "tasks")
