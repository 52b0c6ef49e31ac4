"""What the reranker tests script and read on the wire: the forced tool choice, the JSON
mode, the requests' bodies and tool results, and the run's expected result."""

from __future__ import annotations

import json
from typing import Any

from tests.support.openai_server import ScriptedOpenAI

FORCED = {"type": "function", "function": {"name": "get_topics_content"}}
JSON_MODE = {"type": "json_object"}


def request_body(server: ScriptedOpenAI, index: int) -> dict[str, Any]:
    return server.chat_requests[index].json_body


def tool_results(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "tool")


def run_result(
    topics, people, *, fallback, llm_calls, dropped_ids=0, by_search_order=False
) -> dict[str, Any]:
    """The whole result of a reranker run, as the subgraph returns it."""
    return {
        "selected_topics": topics,
        "selected_people": people,
        "rerank_fallback": fallback,
        "rerank_dropped_ids": dropped_ids,
        "rerank_llm_calls": llm_calls,
        "selected_by_search_order": by_search_order,
    }


def answer(topics: list[dict[str, Any]], people: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"topics": topics, "people": people or []})
