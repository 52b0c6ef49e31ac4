"""Prometheus metrics named after the seeds' tables.

Durations of graph nodes and of chat-model calls, and LLM token counts, are
observed by `GraphMetrics`, a LangChain callback handler every run gets from
`core.tracing.run_config`; counts that only a node knows (topics saved,
coverage gaps, fallbacks, anomalies) are observed where they happen. Metrics
carry no user label: user ids are personal data and unbounded label values.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult
from prometheus_client import Counter, Histogram

SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
COUNTS = (0, 1, 2, 3, 5, 10, 20, 50, 100)


def seconds(name: str, documentation: str, *labels: str) -> Histogram:
    """A duration histogram `topica_<name>`, in seconds."""
    return Histogram(f"topica_{name}", documentation, labels, buckets=SECONDS)


def counts(name: str, documentation: str) -> Histogram:
    """A histogram of small counts `topica_<name>` (candidates, selections)."""
    return Histogram(f"topica_{name}", documentation, buckets=COUNTS)


def total(name: str, documentation: str, *labels: str) -> Counter:
    """A counter `topica_<name>_total`."""
    return Counter(f"topica_{name}", documentation, labels)


# Every agent call: the reply accepted, repaired, or the fallback's reason.
AGENT_CALLS = total("agent_calls", "Agent calls by outcome", "agent", "outcome")

# Topic extraction and consolidation (seed 000).
TOPICS_EXTRACTED = total("topics_extracted", "Topics created")
SPLITTER_DURATION = seconds("splitter_duration_seconds", "Splitter (LLM or embeddings) time")
TOPICS_SIZE_CHARS = Histogram(
    "topica_topics_size_chars",
    "Size of created topics in characters",
    buckets=(500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000),
)
COVERAGE_GAPS = total("topics_coverage_gaps", "Messages no proposed topic covered")
TOPICS_MERGED = total("topics_merged", "Topics merged into another")
MERGER_DURATION = seconds("merger_duration_seconds", "Consolidation step time")
CONSOLIDATION_CANDIDATES = counts(
    "topics_consolidation_candidates", "Merge candidates per checked topic"
)

# Retrieval and reranking (seeds 000, 001).
SEARCH_DURATION = seconds("topics_search_duration_seconds", "Hybrid search time")
SEARCH_RESULTS = counts("topics_search_results", "Topic candidates found")
RERANKER_SELECTED = counts("topics_reranker_selected", "Topics selected by the reranker")
RERANKER_DURATION = seconds("reranker_duration_seconds", "Reranker time (all turns)")
RERANKER_TOOL_CALLS = total("reranker_tool_calls", "Reranker tool calls")
RERANKER_CANDIDATES_IN = counts("reranker_candidates_input", "Candidates shown to the reranker")
RERANKER_CANDIDATES_OUT = counts("reranker_candidates_output", "Candidates the reranker kept")
RERANKER_FALLBACKS = total("reranker_fallback", "Reranker fallbacks by reason", "reason")

# Per-message latency breakdown and anomalies (seed 002).
MESSAGE_RETRIEVAL = seconds("rag_latency_seconds", "Context retrieval per message", "source")
MESSAGE_LLM = seconds("message_llm_duration_seconds", "All LLM calls of one message")
MESSAGE_TOOLS = seconds("message_tool_duration_seconds", "All tool calls of one message")
MESSAGE_TELEGRAM = seconds("message_telegram_duration_seconds", "Sending one answer to Telegram")
FILE_DOWNLOAD = seconds("file_download_duration_seconds", "Downloading one message's files")
TOOL_CALLS = total("tool_calls", "Responder tool calls", "tool")
ANOMALIES = total("anomalies", "empty_response, sanitized, retry_success, retry_failed", "type")

# Chat models.
LLM_CALLS = total("llm_calls", "Chat model calls", "node")
LLM_DURATION = seconds("llm_duration_seconds", "One chat model call", "node")
LLM_TOKENS = total("llm_tokens", "LLM tokens", "node", "kind")
LLM_COST = total("llm_cost_usd", "LLM cost reported by the provider", "node")

NODE_DURATIONS: dict[str, Histogram] = {
    "split": SPLITTER_DURATION,
    "segment": SPLITTER_DURATION,
    "merge": MERGER_DURATION,
    "merge_by_rule": MERGER_DURATION,
    "search": SEARCH_DURATION,
    "rerank": RERANKER_DURATION,
}
RERANKER_TOOL_NODE = "load_content"
RETRIEVAL_NODES = frozenset({"enrich", "search", "rerank"})
TOOL_NODES = frozenset({"tools"})


class GraphMetrics(BaseCallbackHandler):
    """Times graph nodes and chat-model calls; adds them up per top-level run."""

    raise_error = False
    run_inline = True
    """Called in the run's own thread. Otherwise LangChain hands every event of an async
    run (a start and an end for each node and each of LangGraph's inner runnables) to the
    event loop's default executor and awaits it: a thread hop per event, queued behind the
    turns' blocking work (`asyncio.to_thread`) in that same pool."""

    def __init__(self) -> None:
        self._started: dict[UUID, tuple[float, str | None]] = {}
        self._root_of: dict[UUID, UUID] = {}
        self._totals: dict[UUID, dict[str, float]] = {}

    def _root(self, run_id: UUID, parent_run_id: UUID | None) -> UUID:
        root = self._root_of.get(parent_run_id, parent_run_id) if parent_run_id else run_id
        self._root_of[run_id] = root
        return root

    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        root = self._root(run_id, kwargs.get("parent_run_id"))
        if root == run_id:
            self._totals[run_id] = {"retrieval": 0.0, "llm": 0.0, "tools": 0.0}
        node = (kwargs.get("metadata") or {}).get("langgraph_node")
        is_node_run = node is not None and kwargs.get("name") == node
        self._started[run_id] = (time.perf_counter(), node if is_node_run else None)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish_chain(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish_chain(run_id)

    def _finish_chain(self, run_id: UUID) -> None:
        started, node = self._started.pop(run_id, (None, None))
        root = self._root_of.pop(run_id, run_id)
        if started is None:
            return
        elapsed = time.perf_counter() - started
        totals = self._totals.get(root)
        if node is not None:
            if node in NODE_DURATIONS:
                NODE_DURATIONS[node].observe(elapsed)
            if totals is not None and node in RETRIEVAL_NODES:
                totals["retrieval"] += elapsed
            if totals is not None and node in TOOL_NODES:
                totals["tools"] += elapsed
        if root == run_id and totals is not None:
            del self._totals[run_id]
            if totals["retrieval"]:
                MESSAGE_RETRIEVAL.labels(source="auto").observe(totals["retrieval"])
            if totals["llm"]:
                MESSAGE_LLM.observe(totals["llm"])
            if totals["tools"]:
                MESSAGE_TOOLS.observe(totals["tools"])

    def on_chat_model_start(
        self, serialized: dict[str, Any] | None, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._root(run_id, kwargs.get("parent_run_id"))
        node = (kwargs.get("metadata") or {}).get("langgraph_node") or "none"
        self._started[run_id] = (time.perf_counter(), node)
        LLM_CALLS.labels(node=node).inc()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        started, node = self._started.pop(run_id, (None, "none"))
        root = self._root_of.pop(run_id, run_id)
        node = node or "none"
        if started is not None:
            elapsed = time.perf_counter() - started
            LLM_DURATION.labels(node=node).observe(elapsed)
            if root in self._totals:
                self._totals[root]["llm"] += elapsed
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                if usage:
                    LLM_TOKENS.labels(node=node, kind="prompt").inc(usage.get("input_tokens", 0))
                    LLM_TOKENS.labels(node=node, kind="completion").inc(
                        usage.get("output_tokens", 0)
                    )
                cost = (getattr(message, "response_metadata", None) or {}).get(
                    "token_usage", {}
                ) or {}
                if isinstance(cost, dict) and isinstance(cost.get("cost"), int | float):
                    LLM_COST.labels(node=node).inc(cost["cost"])

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = kwargs.get("name") or (serialized or {}).get("name") or "unknown"
        if (metadata or {}).get("langgraph_node") == RERANKER_TOOL_NODE:
            RERANKER_TOOL_CALLS.inc()
        else:
            TOOL_CALLS.labels(tool=name).inc()

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._started.pop(run_id, None)
        self._root_of.pop(run_id, None)


GRAPH_METRICS = GraphMetrics()
