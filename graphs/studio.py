"""The compiled graphs `langgraph.json` exports, for `langgraph dev` and LangGraph Studio.

Compiled without a checkpointer (the LangGraph server brings its own) over
services built from the environment's settings (`TOPICA_DATA_DIR` and the
rest). Only the LangGraph server imports this module; the CLI and the bot
compile the builders themselves with a durable checkpointer.

In Studio, set the run's context (user id, limits) in the assistant's
configuration; the response graph's input is just the user's text.
"""

from __future__ import annotations

from graphs.memory import build_memory_graph
from graphs.reranker import build_reranker_graph
from graphs.response import build_response_graph
from stores.services import default_deps

_deps = default_deps()

response = build_response_graph(_deps).compile(name="response")
memory = build_memory_graph(_deps).compile(name="memory")
reranker = build_reranker_graph(_deps).compile(name="reranker")
