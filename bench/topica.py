"""Topica's method in the evaluation: the retrieval part of the response graph.

`build_retrieval_graph(deps)` is `enrich → search → rerank` made of the response
graph's own node factories and the reranker subgraph, with whatever models the
registry holds (none: the raw question, hybrid search, the search order). The
retrieved topics are the reranker's selection followed by the remaining search
candidates in fused order (what the responder can still load with
`get_topics_content`), each mapped to its member messages by membership.

Under a token budget the context is what the response graph's context assembly fills
with the same topics (`shown_topic_ids`: the reranker's selection, and after it every
other candidate when the search order made the selection; `fill_candidates`): their
messages in `nodes.response.ranking.recall.rank_items`' order (topic rank, full-text and
vector hits and their neighbours, the messages written when the question says; a long
message by its passages most like the question), each taken when it still fits and
skipped when not (`nodes.response.ranking.fill.fill_budgets`), headers charged as shown.
A message counts as in the context when it or one of its passages is; the text of each
topic shown in part goes with it (`Packed.excerpts`, for `bench.key_sentence`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property, partial

from langgraph.graph.state import CompiledStateGraph

from bench.baselines import Retrieval
from bench.corpus import Corpus
from bench.metrics import Packed, Unit, count_tokens
from core.callbacks import LLMUsage
from core.context import ResponseContext
from core.found import found_in
from core.records import MessageRow, parse_timestamp
from core.state import ResponseState
from core.tracing import run_config
from graphs.response import build_retrieval_graph
from nodes.response.offline_answer import recall_topics
from nodes.response.ranking.fill import fill_budgets
from nodes.response.ranking.passages import Item
from nodes.response.ranking.recall import Recall, rank_items
from nodes.response.ranking.weights import Ranking
from nodes.response.rerank_selection import ShownTopics
from nodes.response.topic_content import excerpt_header, topic_date, topic_header
from nodes.shared.budget import CHARS_PER_TOKEN


def ranked_topic_ids(state: ResponseState) -> list[int]:
    """The reranker's selection, then the other candidates in search order."""
    selected = [topic["id"] for topic in state.get("selected_topics") or []]
    rest = [c["id"] for c in found_in(state)["topics"] if c["id"] not in set(selected)]
    return list(dict.fromkeys([*selected, *rest]))


def shown_topic_ids(state: ResponseState) -> list[int]:
    """The topics whose messages the response graph's context fills its budget with: the
    selection, then the other candidates when the search order made it (`fill_candidates`)."""
    return list(dict.fromkeys(topic["id"] for topic in ShownTopics.of(state).topics))


def turn_time(corpus: Corpus) -> str:
    """Questions are asked the day after the conversation's last message."""
    last = max((row["created_at"] for row in corpus.rows.values()), key=parse_timestamp)
    return (datetime.fromisoformat(last) + timedelta(days=1)).isoformat()


TOKENS_PER_TEXT = count_tokens("x") - 1
"""The tokens `count_tokens` adds to those of a text's characters (a message's overhead)."""


@dataclass(frozen=True)
class Fit:
    """One question's shown topics, to fill a budget with as the response graph does."""

    corpus: Corpus
    keys: Mapping[int, str]
    """Each topic's unit key."""
    members: Sequence[tuple[int, Sequence[MessageRow]]]
    headers: Mapping[int, tuple[int, int]]
    days: Mapping[int, str]
    """Each topic's header date (`topic_date`)."""
    recall: Recall
    ranking: Ranking

    @cached_property
    def ranked(self) -> tuple[list[Item], dict[int, list[str]]]:
        """The shown topics' messages ranked (`rank_items`), once for every budget."""
        return rank_items(self.members, self.recall, self.ranking)

    def order(self) -> list[tuple[str, str]]:
        """(unit key, message id) in the order the context takes them."""
        items, _ = self.ranked
        external = self.corpus.external_of
        return list(dict.fromkeys((self.keys[topic_id], external[m]) for topic_id, m, _ in items))

    def __call__(self, budgets: Sequence[int]) -> dict[int, Packed]:
        """What `fill_budgets` puts in a context of each budget (tokens as `count_tokens`
        counts them: the characters `fill_budget` charges, a token per `CHARS_PER_TOKEN`)."""
        chars = [max(0, budget - TOKENS_PER_TEXT) * CHARS_PER_TOKEN for budget in budgets]
        filled = fill_budgets(self.members, self.headers, self.ranked, chars, days=self.days)
        external = self.corpus.external_of
        return {
            budget: Packed(
                message_ids=frozenset(external[m] for m in one.shown),
                tokens=-(-one.chars // CHARS_PER_TOKEN) + TOKENS_PER_TEXT if one.topics else 0,
                units=len(one.topics),
                excerpts={self.keys[t]: " ".join(text.split()) for t, text in one.excerpts.items()},
            )
            for budget, one in zip(budgets, filled, strict=True)
        }


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
        self._days: dict[int, str] = {}
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
        self._days = {topic["id"]: topic_date(topic) for topic in topics}
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

    def fill(self, corpus: Corpus, state: ResponseState) -> Fit:
        """The shown topics' messages in the order the context takes them (`rank_items`),
        and what the response graph's context holds of them at each budget (`fill_budgets`)."""
        rows = corpus.rows
        members = [
            (i, [rows[corpus.external_of[m]] for m in self._members[i]])
            for i in shown_topic_ids(state)
            if i in self._units
        ]
        deps = corpus.deps
        recall = Recall.of(
            state, deps.embedder, partial(deps.indexer.message_vectors, corpus.user_id)
        )
        ranking = Ranking.of(self._context)
        headers = {
            topic_id: (
                len(self._units[topic_id].excerpt_header or ""),
                len(self._units[topic_id].header),
            )
            for topic_id, _ in members
        }
        keys = {topic_id: self._units[topic_id].key for topic_id, _ in members}
        days = {topic_id: self._days[topic_id] for topic_id, _ in members}
        return Fit(corpus, keys, members, headers, days, recall, ranking)

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
        fit = self.fill(corpus, state) if self.excerpts else None
        quoted, untimed_ms = None, 0.0
        if self.quotes:
            started = time.perf_counter()
            topics = await asyncio.to_thread(recall_topics, corpus.deps, self._context, state)
            quoted = corpus.externals([m["id"] for topic in topics for m in topic.quotes])
            untimed_ms = (time.perf_counter() - started) * 1000
        return Retrieval(
            [self._units[i] for i in ranked],
            fill=fit.order() if fit is not None else None,
            fit=fit,
            quoted=quoted,
            untimed_ms=untimed_ms,
            selected=len(state.get("selected_topics") or []),
            llm_calls=usage.calls,
            prompt_tokens=usage.prompt_tokens,
            info={
                "rerank_fallback": state.get("rerank_fallback"),
                "enrich_fallback": state.get("enrich_fallback"),
            },
        )
