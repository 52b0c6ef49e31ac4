"""The simple alternatives Topica is measured against, on the same stores and embedder.

- `message_rag`: the user's message vectors (the index the memory pipeline keeps), one
  message per unit, nearest first;
- `bm25`: SQLite FTS5 BM25 over the user's messages, one message per unit;
- `hybrid_messages`: seed 004's auto-RAG search over all of the user's messages (message
  vectors and BM25, fused by RRF with k=60; no topics), one message per unit: what a
  user would build instead of Topica;
- `hybrid_neighbours`: the same ranking, each hit shown with the messages right before
  and after it in the conversation (a unit of up to three messages; the context takes
  the hit first, then its neighbours, skipping messages already shown);
- `session`: LoCoMo sessions as units, ranked by the cosine of the question to the
  session's embedded conversation log (how topics are embedded, without a summary);
- `full_context`: the whole conversation; under a budget, the most recent messages
  that fit (what a sliding window without memory would show).

A method answers a question with ranked `Unit`s, deep enough to fill the largest
budget the run measures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bench.corpus import Corpus
from bench.metrics import Fitter, Unit
from core.text import conversation_log, short_time
from nodes.response.ranking.fusion import rrf_scores

SEED_RRF_K = 60
"""Seed 004's fusion constant (auto-RAG's RRF)."""


@dataclass
class Retrieval:
    units: list[Unit]
    """Ranked units: recall@k and NDCG are measured on these, by membership."""
    fill: list[tuple[str, str]] | None = None
    """(unit key, message id) in the order the context takes them under a budget;
    None: each unit whole, in rank order."""
    selected: int | None = None
    """How many leading units the method itself puts in context (None: 5)."""
    llm_calls: int = 0
    prompt_tokens: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    """Method-specific facts about this answer (e.g. which fallback the reranker took)."""
    quoted: list[str] | None = None
    """The messages the method's answer without a model quotes (Topica's memory-only
    answer); None: the method has no such answer."""
    untimed_ms: float = 0.0
    """What `retrieve` spent on more than retrieval (the quotes), left out of its latency."""
    fit: Fitter | None = None
    """What the method's own context holds at each budget (None: the longest prefix of
    `fill` that fits, `bench.metrics.pack`)."""


class Method(Protocol):
    name: str
    uses_embedder: bool
    """Its latency includes encoding the question (measured once, added by the harness)."""
    ranked: bool
    """False for a method with no ranking (recall@k and NDCG do not apply). A ranked
    method whose units are not fixed sets `graded = False`: no NDCG."""

    async def prepare(self, corpus: Corpus) -> None:
        """Per-conversation indexing beyond what ingestion stored."""

    def unit_of(self, corpus: Corpus) -> Mapping[str, str]:
        """Each message's unit key, for the ideal ranking of NDCG."""

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval: ...


def message_unit(corpus: Corpus, external_id: str) -> Unit:
    return Unit(key=external_id, message_ids=(external_id,))


class MessageLevel:
    """A baseline that ranks single messages: each message is its own unit."""

    name = "messages"
    uses_embedder = False
    ranked = True

    async def prepare(self, corpus: Corpus) -> None:
        return None

    def unit_of(self, corpus: Corpus) -> Mapping[str, str]:
        return {i: i for i in corpus.order}

    async def hits(self, corpus: Corpus, question: str) -> list[tuple[int, float]]:
        raise NotImplementedError

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        hits = await self.hits(corpus, question)
        ids = corpus.externals([row_id for row_id, _ in hits])
        return Retrieval([message_unit(corpus, i) for i in ids])


class MessageRag(MessageLevel):
    """Vector search over all messages."""

    name = "message_rag"
    uses_embedder = True

    async def hits(self, corpus: Corpus, question: str) -> list[tuple[int, float]]:
        deps = corpus.deps
        vector = deps.embedder.encode_query(question)
        return await asyncio.to_thread(
            deps.vectors.query, "messages", corpus.user_id, vector, len(corpus.order)
        )


class Bm25(MessageLevel):
    """BM25 (SQLite FTS5) over all messages."""

    name = "bm25"

    async def hits(self, corpus: Corpus, question: str) -> list[tuple[int, float]]:
        return await asyncio.to_thread(
            corpus.deps.store.messages.search, corpus.user_id, question, len(corpus.order)
        )


class HybridMessages(MessageLevel):
    """Seed 004's auto-RAG over all messages: vectors and BM25, fused by RRF (k=60).

    Both lists run the whole conversation deep, so the fusion can fill any budget; the
    seed's relevance threshold and top-k are left out (the budget is the limit here).
    Ties (same fused score) keep the vector list's order.
    """

    name = "hybrid_messages"
    uses_embedder = True

    async def hits(self, corpus: Corpus, question: str) -> list[tuple[int, float]]:
        deps, depth = corpus.deps, len(corpus.order)
        vector = deps.embedder.encode_query(question)
        by_vector = await asyncio.to_thread(
            deps.vectors.query, "messages", corpus.user_id, vector, depth
        )
        by_text = await asyncio.to_thread(
            deps.store.messages.search, corpus.user_id, question, depth
        )
        scores = rrf_scores([[i for i, _ in by_vector], [i for i, _ in by_text]], SEED_RRF_K)
        return sorted(scores.items(), key=lambda item: -item[1])


def neighbour_units(corpus: Corpus, hits: Sequence[str]) -> Retrieval:
    """Each hit with the messages right before and after it: units in hit order, the
    context filled hit first, then its neighbours, each message once."""
    units: list[Unit] = []
    fill: list[tuple[str, str]] = []
    shown: set[str] = set()
    for hit in hits:
        position = corpus.position[hit]
        window = corpus.order[max(0, position - 1) : position + 2]
        unit = Unit(key=f"around:{hit}", message_ids=tuple(window))
        units.append(unit)
        for message_id in (hit, *(i for i in window if i != hit)):
            if message_id not in shown:
                shown.add(message_id)
                fill.append((unit.key, message_id))
    return Retrieval(units, fill=fill)


class HybridNeighbours(HybridMessages):
    """`hybrid_messages` with each hit's neighbours. Its units overlap and depend on the
    question, so NDCG (whose ideal ranking needs fixed units) is not reported."""

    name = "hybrid_neighbours"
    graded = False

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        hits = await self.hits(corpus, question)
        return neighbour_units(corpus, corpus.externals([row_id for row_id, _ in hits]))


class SessionRetrieval:
    name = "session"
    uses_embedder = True
    ranked = True

    def __init__(self) -> None:
        self._units: list[Unit] = []
        self._vectors = np.zeros((0, 0), np.float32)

    async def prepare(self, corpus: Corpus) -> None:
        units = []
        texts = []
        for name, dia_ids in corpus.conversation.sessions.items():
            ids = [i for i in dia_ids if i in corpus.rows]
            if not ids:
                continue
            rows = [corpus.rows[i] for i in ids]
            number = name.removeprefix("session_")
            units.append(
                Unit(
                    key=name,
                    message_ids=corpus.in_order(ids),
                    header=f"=== Session {number} ===\nDate: {short_time(rows[0]['created_at'])}",
                )
            )
            texts.append(conversation_log(rows))
        self._units = units
        self._vectors = await asyncio.to_thread(corpus.deps.embedder.encode, texts)

    def unit_of(self, corpus: Corpus) -> Mapping[str, str]:
        return {i: unit.key for unit in self._units for i in unit.message_ids}

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        vector = corpus.deps.embedder.encode_query(question)
        scores = self._vectors @ vector
        return Retrieval([self._units[i] for i in np.argsort(-scores, kind="stable")])


class FullContext(MessageLevel):
    """The newest messages of the whole conversation, as much as the budget holds."""

    name = "full_context"
    ranked = False

    def unit_of(self, corpus: Corpus) -> Mapping[str, str]:
        return {i: "conversation" for i in corpus.order}

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        conversation = Unit(key="conversation", message_ids=tuple(corpus.order))
        # Newest first: under a budget, the window keeps the end of the conversation.
        fill = [(conversation.key, i) for i in reversed(corpus.order)]
        return Retrieval([conversation], fill=fill, selected=1)


def baselines() -> list[Method]:
    return [
        MessageRag(),
        Bm25(),
        HybridMessages(),
        HybridNeighbours(),
        SessionRetrieval(),
        FullContext(),
    ]
