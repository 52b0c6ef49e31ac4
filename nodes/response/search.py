"""Search: hybrid candidates for one turn, for the current user only (seeds 000, 001, 004).

Topic candidates come from ranked lists fused by Reciprocal Rank Fusion (k=60), each query
(the raw message and the enriched one) contributing its own lists:

- topic vectors at or above `topics_threshold` (cosine of "summary + conversation log");
- BM25 over topic summaries;
- BM25 over messages and message vectors: every archived message hit votes for its topic
  at the hit's rank (a question naming some of the conversation's speakers is searched
  without their names: `nodes.response.speakers.message_search`);
- BM25 over document passages and passage vectors: a passage votes for the topic of the
  message that carried its document;
- the messages written on a day or in a month the question names
  (`nodes.response.dates.dated_messages`), voting for their topics as one more message
  list.

The best `retrieved_topics_count` topics by fused score are then ordered by their best
message (`nodes.response.topic_order`): the order the reranker reads them in, and the
one its fallback takes the first of. Each message is judged there (and in the context's
excerpts) with a vector list `excerpt_vector_depth` deep, where the fusion reads only its
first `message_hits_count`: a message far down it is evidence of the message, not a
vote for its topic.

Why message vectors: with the local USE embedder a short question rarely reaches 0.60
against a whole topic's vector (on the example session no question does), while the one
message that holds the answer ranks near the top of the message list. Facts and people
are candidates by vector similarity alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.metrics import SEARCH_RESULTS
from core.ports import VectorKind
from core.state import FactCandidate, PersonCandidate, ResponseState, TopicCandidate
from nodes.response.dates import dated_messages
from nodes.response.fusion import rrf_scores, topic_votes
from nodes.response.relevance import (
    SIGNALS,
    Signal,
    best_scores,
    clears_floor,
    floors_of,
    message_curve,
    name_words,
    topic_curve,
    written_as_a_name,
)
from nodes.response.speakers import message_search
from nodes.response.topic_content import topic_date
from nodes.response.topic_order import best_message_order
from nodes.response.vector_reads import VectorReads


def search_queries(text: str, enriched: str | None) -> list[str]:
    """The distinct, non-empty queries of a turn: the raw message first."""
    queries: dict[str, str] = {}
    for query in (text, enriched or ""):
        key = " ".join(query.split()).casefold()
        if key:
            queries.setdefault(key, query.strip())
    return list(queries.values())


SEARCH_THREADS = 4
"""A search's vector queries (one per kind) and its full-text query over topics run
beside its full-text query over messages (each thread reads through its own connection:
`SqliteDatabase._reader`)."""

_pool = ThreadPoolExecutor(max_workers=SEARCH_THREADS, thread_name_prefix="topica-search")


def kind_limits(context: ResponseContext) -> dict[VectorKind, int]:
    return {
        "topics": context.retrieved_topics_count,
        "messages": max(context.message_hits_count, context.excerpt_vector_depth),
        "facts": context.fact_candidates_count,
        "people": context.people_candidates_count,
        "passages": context.message_hits_count,
    }


@dataclass(frozen=True)
class Hits:
    """What one search found, per query (in the order of `queries`)."""

    vectors: dict[VectorKind, list[list[tuple[int, float]]]]
    """Nearest records of each kind searched: (id, cosine), best first. The messages run
    `excerpt_vector_depth` deep; the fusion reads the first `message_hits_count`."""
    topic_scored: list[list[tuple[int, float]]]
    """BM25 over topic summaries: (topic id, score), best first."""
    message_scored: list[list[tuple[int, float]]]
    """BM25 over messages: (message id, score), best first."""
    passage_text: list[list[tuple[int, float]]]
    """BM25 over document passages: (passage id, score), best first."""
    vectors_down: bool = False
    """The vector index failed during the search: its lists are empty, not searched."""
    queries: Sequence[str] = ()
    """The queries searched, in order."""
    dated: list[int] = field(default_factory=list)
    """Archived messages written on the days and in the months the queries name
    (`dated_messages`)."""

    @property
    def topic_text(self) -> list[list[int]]:
        return [[i for i, _ in hits] for hits in self.topic_scored]

    @property
    def message_text(self) -> list[list[int]]:
        return [[i for i, _ in hits] for hits in self.message_scored]

    def signals(
        self, archived: Container[int], message_of: Mapping[int, int] | None = None
    ) -> dict[Signal, list[tuple[int, float]]]:
        """Every scored hit of each relevance signal, all queries together.

        A message hit counts only among `archived` (the user's messages filed in a topic),
        as in the fusion: the conversation going on, the turn's own question included
        (once indexed, it is its own best hit), votes for no topic
        and so is no evidence that memory holds anything on the turn. A passage hit counts
        as a hit on the message that carried its document (`message_of`: passage id to
        message id), as in the fusion: a document's text is what its message says."""
        as_messages = message_of or {}

        def passages(found: list[list[tuple[int, float]]]) -> list[list[tuple[int, float]]]:
            return [[(as_messages[i], s) for i, s in hits if i in as_messages] for hits in found]

        lists = {
            "message_vectors": [
                *self.vectors.get("messages", []),
                *passages(self.vectors.get("passages", [])),
            ],
            "topic_vectors": self.vectors.get("topics", []),
            "message_bm25": [*self.message_scored, *passages(self.passage_text)],
            "topic_bm25": self.topic_scored,
        }
        messages = {"message_vectors", "message_bm25"}
        return {
            signal: [
                hit
                for hits in lists[signal]
                for hit in hits
                if signal not in messages or hit[0] in archived
            ]
            for signal in SIGNALS
        }


TOPIC_KINDS: tuple[VectorKind, ...] = ("topics", "messages", "passages")
"""The vector kinds that vote for topics."""


def find_hits(
    deps: Deps,
    context: ResponseContext,
    queries: Sequence[str],
    kinds: Sequence[VectorKind],
    reads: VectorReads | None = None,
) -> Hits:
    """Every ranked list of a search, with one round trip per vector kind (all queries in
    it) running concurrently with the full-text queries.

    Each query is encoded once (the embedder's cache holds the turn's stored message, so
    the raw text is not encoded again). Vector hits are ids only: they become records
    through the user's relational rows, so a kind the user has no rows of (no documents,
    no facts yet) is not asked: its lists are empty, as its hits would all be dropped.
    """
    user_id, limits, store = context.user_id, kind_limits(context), deps.store
    reads = reads or VectorReads(deps.vectors, user_id)
    vectors = [deps.embedder.encode_query(query) for query in queries]
    held = store.holding(user_id, kinds)
    pending = {k: _pool.submit(reads.nearest, k, vectors, limits[k]) for k in kinds if k in held}
    topic_text = _pool.submit(
        lambda: [
            store.topics.search(user_id, query, context.retrieved_topics_count) for query in queries
        ]
    )
    message_scored = [
        message_search(store, user_id, query, context.message_hits_count) for query in queries
    ]
    passage_text = [
        store.attachments.search(user_id, query, context.message_hits_count) for query in queries
    ]
    topic_scored = topic_text.result()
    vector_hits = {
        kind: pending[kind].result() if kind in pending else [[] for _ in queries] for kind in kinds
    }
    down = reads.unavailable is not None
    found = [[i for i, _ in hits] for hits in (*message_scored, *vector_hits.get("messages", []))]
    dated = dated_messages(store, context, queries, found)
    return Hits(
        vector_hits,
        topic_scored,
        message_scored,
        passage_text,
        vectors_down=down,
        queries=queries,
        dated=dated,
    )


def topic_candidates(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> list[TopicCandidate]:
    """The user's topic candidates, best first, at most `retrieved_topics_count` (`fuse_topics`)."""
    return topic_search(deps, context, queries)[0]


def topic_search(
    deps: Deps,
    context: ResponseContext,
    queries: Sequence[str],
    reads: VectorReads | None = None,
) -> tuple[list[TopicCandidate], list[list[int]], list[list[int]]]:
    """The user's topic candidates (`fuse_topics`), and each query's full-text and vector
    message hits."""
    hits = find_hits(deps, context, queries, TOPIC_KINDS, reads)
    candidates = fuse_topics(deps, context, hits)
    if not candidates:
        return [], [], []
    return candidates, hits.message_text, message_vector_ids(hits)


def relevant(
    deps: Deps,
    context: ResponseContext,
    hits: Hits,
    topic_of: dict[int, int | None],
    message_of: Mapping[int, int] | None = None,
) -> bool:
    """False when the floor is on and no signal's best hit clears it: memory holds nothing
    on this (no candidates, so the reranker is skipped).

    `topic_of` maps the message hits to their topics (None while unarchived), `message_of`
    the passage hits to their messages. The vector floors are those of a memory the
    user's size (archived messages and topics, counted only as far as the floors grow).
    Under every floor, a name the question shares with memory still makes it relevant,
    and so does a day or month it names that memory holds messages of (`hits.dated`).
    With the
    vector index down the gate is open: the floors were calibrated on all four signals
    together, and the full-text ones alone would turn away most questions memory holds
    (the turn goes on with full-text search alone, every full-text hit voting)."""
    if not context.relevance_floor or hits.vectors_down or hits.dated:
        return True  # a day or month the question names holds archived messages
    archived = {message_id for message_id, topic_id in topic_of.items() if topic_id is not None}
    best = best_scores(hits.signals(archived, message_of))
    if not any(score is not None for score in best.values()):
        return False
    most_messages, most_topics = message_curve(context).saturation, topic_curve(context).saturation
    if clears_floor(best, floors_of(context, most_messages, most_topics)):
        return True  # over the floors of a memory of any size: nothing to count
    store, user_id = deps.store, context.user_id
    messages = store.messages.archived_count(user_id, most_messages)
    topics = store.topics.count(user_id, most_topics)
    if clears_floor(best, floors_of(context, messages, topics)):
        return True
    return named_in_memory(deps, user_id, hits.queries)


NAME_HITS = 20
"""Full-text hits read per name: enough to find one where it is written as a name."""


def named_in_memory(deps: Deps, user_id: int, queries: Sequence[str]) -> bool:
    """Whether a name in the queries (`name_words`) is one the user's archived conversation
    writes as a name too (`written_as_a_name`), found through the full-text index."""
    store = deps.store
    for word in {word: None for query in queries for word in name_words(query)}:
        found = [i for i, _ in store.messages.search(user_id, word, NAME_HITS)]
        archived = [i for i, topic in store.messages.topics_of(user_id, found).items() if topic]
        rows = store.messages.by_ids(user_id, archived)
        if written_as_a_name(word, [r["content"] for r in rows if r["kind"] == "conversation"]):
            return True
    return False


def message_vector_ids(hits: Hits) -> list[list[int]]:
    return [[i for i, _ in found] for found in hits.vectors["messages"]]


def fuse_topics(deps: Deps, context: ResponseContext, hits: Hits) -> list[TopicCandidate]:
    """The user's best `retrieved_topics_count` topics by fused score, in the order of
    their best message (`nodes.response.topic_order`); none when the search is not
    `relevant` (the relevance floor).

    The threshold decides whether a topic vector hit enters the fusion; `vector_score`
    reports the topic's best cosine among the nearest topics either way (ties broken by it).
    The message hits (ids, best first, per query; the vector lists deeper than the
    fusion reads them) are what `nodes.excerpts` ranks the recalled topics' messages with,
    and the candidates' order too. Ids from the vector index count only once the user's
    own rows confirm them (`topics_of`, `topics.by_ids` filter by `user_id`).
    """
    store, user_id = deps.store, context.user_id
    ranked_lists: list[list[int]] = []
    cosine: dict[int, float] = {}
    message_lists: list[list[int]] = []
    for topic_hits, topic_text, message_hits, message_text in zip(
        hits.vectors["topics"],
        hits.topic_text,
        hits.vectors["messages"],
        hits.message_text,
        strict=True,
    ):
        for topic_id, similarity in topic_hits:
            cosine[topic_id] = max(similarity, cosine.get(topic_id, similarity))
        threshold = context.topics_threshold
        ranked_lists.append([i for i, similarity in topic_hits if similarity >= threshold])
        ranked_lists.append(topic_text)
        message_lists.append([i for i, _ in message_hits[: context.message_hits_count]])
        message_lists.append(message_text)
    message_of = passage_messages(deps, user_id, hits)
    passages = passage_lists(hits, message_of)  # per query: vectors, then full text
    message_lists.extend(passages)
    if hits.dated:
        message_lists.append(hits.dated)
    topic_of = store.messages.topics_of(user_id, sorted({i for ids in message_lists for i in ids}))
    if not relevant(deps, context, hits, topic_of, message_of):
        return []
    for message_ids in message_lists:
        ranked_lists.append(topic_votes([topic_of.get(i) for i in message_ids]))
    scores = rrf_scores(ranked_lists, context.rrf_k)
    fused = sorted(scores, key=lambda i: (-scores[i], -cosine.get(i, 0.0), i))
    ranked = best_message_order(
        store,
        context,
        fused[: context.retrieved_topics_count],
        hit_lists=[*hits.message_text, *passages[1::2]],
        vector_lists=[*message_vector_ids(hits), *passages[0::2]],
        dated=hits.dated,
        queries=hits.queries,
    )
    best = dict(ranked)
    topics = store.topics.by_ids(user_id, list(best))
    return [
        TopicCandidate(
            id=topic["id"],
            summary=topic["summary"],
            date=topic_date(topic),
            message_count=topic["message_count"],
            size_chars=topic["size_chars"],
            score=best[topic["id"]],
            fused_score=scores[topic["id"]],
            vector_score=cosine.get(topic["id"]),
        )
        for topic in topics
    ]


def passage_messages(deps: Deps, user_id: int, hits: Hits) -> dict[int, int]:
    """{passage id: id of the message that carried its document} of the passage hits the
    user's own rows confirm."""
    found = [*hits.vectors["passages"], *hits.passage_text]
    rows = deps.store.attachments.passages_by_ids(
        user_id, sorted({i for passages in found for i, _ in passages})
    )
    return {row["id"]: row["message_id"] for row in rows}


def passage_lists(hits: Hits, message_of: Mapping[int, int]) -> list[list[int]]:
    """The messages whose documents hold each query's passages nearest to it (vectors) and
    matching it (BM25), best first: two ranked lists a query, a message once per passage."""
    return [
        [message_of[i] for i, _ in passages if i in message_of]
        for pair in zip(hits.vectors["passages"], hits.passage_text, strict=True)
        for passages in pair
    ]


def best_above(
    per_query: Sequence[Sequence[tuple[int, float]]], threshold: float
) -> dict[int, float]:
    """{id: best cosine} of the hits at or above `threshold` for any query, best first."""
    best: dict[int, float] = {}
    for hits in per_query:
        for record_id, similarity in hits:
            if similarity >= threshold:
                best[record_id] = max(similarity, best.get(record_id, similarity))
    return dict(sorted(best.items(), key=lambda item: -item[1]))


def fact_candidates(deps: Deps, context: ResponseContext, hits: Hits) -> list[FactCandidate]:
    score = best_above(hits.vectors["facts"], context.facts_threshold)
    facts = deps.store.facts.by_ids(context.user_id, list(score))
    fields = ("id", "content", "type", "importance")
    return [FactCandidate(**{k: f[k] for k in fields}, score=score[f["id"]]) for f in facts]


def person_description(circle: str | None, aliases: Sequence[str], bio: str | None) -> str:
    parts = [circle or "", f"aka {', '.join(aliases)}" if aliases else "", bio or ""]
    return "; ".join(part for part in parts if part)


def people_candidates(deps: Deps, context: ResponseContext, hits: Hits) -> list[PersonCandidate]:
    score = best_above(hits.vectors["people"], context.people_threshold)
    return [
        PersonCandidate(
            id=person["id"],
            name=person["name"],
            description=person_description(person["circle"], person["aliases"], person["bio"]),
            score=score[person["id"]],
        )
        for person in deps.store.people.by_ids(context.user_id, list(score))
    ]


def hybrid_search(deps: Deps, context: ResponseContext, queries: Sequence[str]) -> dict:
    """The search node's update: topic, people and fact candidates of the user, and the
    full-text and vector message hits the context assembly picks topic excerpts with; with
    the vector store down, what full-text search found, and `search_fallback` says so."""
    reads = VectorReads(deps.vectors, context.user_id)
    hits = find_hits(deps, context, queries, (*TOPIC_KINDS, "facts", "people"), reads)
    found: dict[str, Any] = {
        "candidates": fuse_topics(deps, context, hits),
        "message_hits": hits.message_text,
        "message_vector_hits": message_vector_ids(hits),
        "message_dated": hits.dated,
        "people_candidates": people_candidates(deps, context, hits),
        "fact_candidates": fact_candidates(deps, context, hits),
    }
    if reads.unavailable is not None:
        found["search_fallback"] = "vectors_unavailable"
    return found


def make_search(deps: Deps):
    async def search(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        queries = search_queries(state["text"], state.get("query"))
        found = await asyncio.to_thread(hybrid_search, deps, runtime.context, queries)
        SEARCH_RESULTS.observe(len(found["candidates"]))
        return found

    return search
