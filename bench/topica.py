"""Topica's method in the evaluation: the retrieval part of the response graph.

`build_retrieval_graph(deps)` is `enrich → search → rerank` made of the response
graph's own node factories and the reranker subgraph, with whatever models the
registry holds (none: the raw question, hybrid search, the search order). The
retrieved topics are the reranker's selection followed by the remaining search
candidates in fused order (what the responder can still load with
`get_topics_content`), each mapped to its member messages by membership.

Under a token budget the context is filled message by message in the order
`nodes.response.ranking.recall.rank_members` gives the shown topics' messages (topic rank,
full-text and vector hits and their neighbours and the messages written when the
question says, fused, with the hits of speakers the question does not name lending only
to their neighbours): the ranking the response graph's context assembly cuts recalled
topics with when they do not fit, over the same topics (`shown_topic_ids`): the
reranker's selection, and after it every other candidate when the search order made the
selection (no model chose; `fill_candidates`). A long message comes by its passages most
like the question (`rank_items`), rendered cut as the context shows it; it counts as in
the context when one of its passages is. A topic shown whole has the header the
response graph shows it with (id, date, size, summary); a topic shown in part has the
short one the response graph shows it with too (`excerpt_header`: id, date).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache

from langgraph.graph.state import CompiledStateGraph

from bench.baselines import Retrieval
from bench.corpus import Corpus
from bench.metrics import CutLine, Unit, part_id
from core.callbacks import LLMUsage
from core.context import ResponseContext
from core.found import NOTHING_FOUND
from core.records import parse_timestamp
from core.state import ResponseState
from core.tracing import run_config
from graphs.response import build_retrieval_graph
from nodes.response.offline_answer import recall_topics
from nodes.response.ranking.passages import cut_line
from nodes.response.ranking.recall import Recall, rank_items
from nodes.response.ranking.weights import Ranking
from nodes.response.rerank_selection import ShownTopics
from nodes.response.topic_content import excerpt_header, topic_header


def ranked_topic_ids(state: ResponseState) -> list[int]:
    """The reranker's selection, then the other candidates in search order."""
    selected = [topic["id"] for topic in state.get("selected_topics") or []]
    found = state.get("found") or NOTHING_FOUND
    rest = [c["id"] for c in found["topics"] if c["id"] not in set(selected)]
    return list(dict.fromkeys([*selected, *rest]))


def shown_topic_ids(state: ResponseState) -> list[int]:
    """The topics whose messages the response graph's context fills its budget with: the
    selection, then the other candidates when the search order made it (`fill_candidates`)."""
    return list(dict.fromkeys(topic["id"] for topic in ShownTopics.of(state).topics))


def turn_time(corpus: Corpus) -> str:
    """Questions are asked the day after the conversation's last message."""
    last = max((row["created_at"] for row in corpus.rows.values()), key=parse_timestamp)
    return (datetime.fromisoformat(last) + timedelta(days=1)).isoformat()


class Topica:
    """Topica's retrieval as an evaluation method.

    `excerpts=True` fills a budget with the retrieved topics' messages, most relevant
    first (`nodes.response.ranking`); `excerpts=False` takes topics whole, in rank order.
    """

    ranked = True
    uses_embedder = True

    def __init__(
        self,
        name: str = "topica",
        *,
        excerpts: bool = True,
        context_overrides: Mapping[str, object] | None = None,
        shared_states: dict[str, ResponseState] | None = None,
        quotes: bool = False,
    ) -> None:
        self.name = name
        self.excerpts = excerpts
        self.quotes = quotes
        """Also report what the memory-only answer would quote (`Retrieval.quoted`)."""
        self.context_overrides = dict(context_overrides or {})
        self.shared_states = shared_states
        """Graph states by question, shared by variants that differ only in how the
        budget is filled (the excerpt weights): the graph runs once per question."""
        self._graph: CompiledStateGraph | None = None
        self._context: ResponseContext | None = None
        self._units: dict[int, Unit] = {}
        self._members: dict[int, list[int]] = {}
        self.config: dict[str, object] = {}
        """What this run retrieved with, for the report (set by `prepare`)."""

    async def prepare(self, corpus: Corpus) -> None:
        deps = corpus.deps
        self._graph = build_retrieval_graph(deps).compile(name="retrieval")
        self._context = ResponseContext.from_settings(
            deps.settings,
            user_id=corpus.user_id,
            now_iso=turn_time(corpus),
        ).tuned(**self.context_overrides)
        context = self._context
        self.config = {
            "fill": "relevant messages" if self.excerpts else "whole topics",
            "message_hits_count": context.tuning.message_hits_count,
            "excerpt_vector_depth": context.tuning.excerpt_vector_depth,
            "topics_threshold": context.topics_threshold,
            "retrieved_topics_count": context.retrieved_topics_count,
            "rrf_k": context.tuning.rrf_k,
            "excerpt_weights": Ranking.of(context).weights(),
            "excerpt_named_speakers": context.tuning.excerpt_named_speakers,
            "rerank_max_topics": context.rerank_max_topics,
            "enricher": deps.models.name("enricher"),
            "reranker": deps.models.name("reranker"),
        }
        topics = await asyncio.to_thread(deps.store.topics.all_of, corpus.user_id)
        members = await asyncio.to_thread(
            deps.store.messages.external_ids_by_topic,
            corpus.user_id,
            [topic["id"] for topic in topics],
        )
        self._members = {
            topic_id: [corpus.rows[i]["id"] for i in external_ids]
            for topic_id, external_ids in members.items()
        }
        self._units = {
            topic["id"]: Unit(
                key=f"topic:{topic['id']}",
                message_ids=tuple(members[topic["id"]]),
                header=topic_header(topic),
                excerpt_header=excerpt_header(topic),
            )
            for topic in topics
        }

    def unit_of(self, corpus: Corpus) -> Mapping[str, str]:
        return {i: unit.key for unit in self._units.values() for i in unit.message_ids}

    def fill(
        self, corpus: Corpus, question: str, state: ResponseState
    ) -> tuple[list[tuple[str, str]], CutLine]:
        """The shown topics' messages (a long one by passages, `bench.metrics.part_id`) in
        the order the context takes them (`rank_items`), and the line of one cut."""
        rows = corpus.rows
        items, passages = rank_items(
            [
                (i, [rows[corpus.external_of[m]] for m in self._members[i]])
                for i in shown_topic_ids(state)
                if i in self._units
            ],
            Recall.of(state, corpus.deps.embedder),
            Ranking.of(self._context),
        )
        fill = [
            (
                self._units[topic_id].key,
                corpus.external_of[message_id]
                if index is None
                else part_id(corpus.external_of[message_id], index),
            )
            for topic_id, message_id, index in items
            if message_id in corpus.external_of
        ]
        by_external = {corpus.external_of[m]: parts for m, parts in passages.items()}

        @cache
        def cut(message_id: str, chosen: frozenset[int]) -> str:
            return cut_line(rows[message_id], by_external[message_id], chosen)

        return fill, cut

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        assert self._graph is not None, "prepare() first"
        usage = LLMUsage()
        config = {**run_config("retrieval", corpus.user_id), "callbacks": [usage]}
        shared = self.shared_states
        if shared is not None and question in shared:
            state = shared[question]
        else:
            state = await self._graph.ainvoke({"text": question}, config, context=self._context)
            if shared is not None:
                shared[question] = state
        ranked = [i for i in ranked_topic_ids(state) if i in self._units]
        fill, cut = self.fill(corpus, question, state) if self.excerpts else (None, None)
        quoted, untimed_ms = None, 0.0
        if self.quotes:
            started = time.perf_counter()
            topics = await asyncio.to_thread(recall_topics, corpus.deps, self._context, state)
            quoted = corpus.externals([m["id"] for topic in topics for m in topic.quotes])
            untimed_ms = (time.perf_counter() - started) * 1000
        return Retrieval(
            [self._units[i] for i in ranked],
            fill=fill,
            quoted=quoted,
            untimed_ms=untimed_ms,
            cut=cut,
            selected=len(state.get("selected_topics") or []),
            llm_calls=usage.calls,
            prompt_tokens=usage.prompt_tokens,
            info={
                "rerank_fallback": state.get("rerank_fallback"),
                "enrich_fallback": state.get("enrich_fallback"),
            },
        )
