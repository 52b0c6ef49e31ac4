"""The ranked lists of one search: every kind of hit for each of the turn's queries."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from core.context import ResponseContext
from core.deps import Deps
from core.ports import Store, VectorKind
from nodes.response.ranking.dates import named_periods
from nodes.response.ranking.floors import SIGNALS, Signal
from nodes.response.ranking.speakers import name_stems, named_speakers, without_names
from nodes.response.ranking.text_passages import passage_ranked
from nodes.response.vector_reads import VectorReads
from nodes.shared.clock import turn_moment


def kind_limits(context: ResponseContext) -> dict[VectorKind, int]:
    return {
        "topics": context.retrieved_topics_count,
        "messages": max(context.tuning.message_hits_count, context.tuning.excerpt_vector_depth),
        "facts": context.tuning.fact_candidates_count,
        "people": context.tuning.people_candidates_count,
        "passages": context.tuning.message_hits_count,
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
    held: frozenset[str] = frozenset()
    """The kinds of record the user holds (`Store.holding`), documents' passages among
    them: a kind not held was not searched."""
    evidence_scored: list[list[tuple[int, float]]] | None = None
    """The full-text message hits the context is filled from, long messages ranked by
    their best passage (`evidence_search`); None: `message_scored`."""

    @property
    def topic_text(self) -> list[list[int]]:
        return [[i for i, _ in hits] for hits in self.topic_scored]

    @property
    def message_text(self) -> list[list[int]]:
        return [[i for i, _ in hits] for hits in self.message_scored]

    @property
    def evidence_text(self) -> list[list[int]]:
        scored = self.message_scored if self.evidence_scored is None else self.evidence_scored
        return [[i for i, _ in hits] for hits in scored]

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
    The full-text index of passages is not asked either while the user has none.
    """
    user_id, limits, store = context.user_id, kind_limits(context), deps.store
    reads = reads or VectorReads(deps.vectors, user_id)
    vectors = [deps.embedder.encode_query(query) for query in queries]
    held = store.holding(user_id, (*kinds, "passages"))
    pending = {
        k: deps.search_threads.submit(reads.nearest, k, vectors, limits[k])
        for k in kinds
        if k in held
    }
    topic_text = deps.search_threads.submit(
        lambda: [
            store.topics.search(user_id, query, context.retrieved_topics_count) for query in queries
        ]
    )
    searched = [
        searched_messages(store, user_id, query, context.tuning.message_hits_count)
        for query in queries
    ]
    message_scored = [found for _, found in searched]
    evidence = deps.search_threads.submit(
        lambda: [evidence_search(store, context, query, found) for query, found in searched]
    )
    passage_text = [
        store.attachments.search(user_id, query, context.tuning.message_hits_count)
        if "passages" in held
        else []
        for query in queries
    ]
    topic_scored = topic_text.result()
    vector_hits = {
        kind: pending[kind].result() if kind in pending else [[] for _ in queries] for kind in kinds
    }
    if "topics" in pending:
        vector_hits["topics"] = current_topics(store, user_id, vector_hits["topics"])
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
        held=frozenset(held),
        evidence_scored=evidence.result(),
    )


def current_topics(
    store: Store, user_id: int, found: list[list[tuple[int, float]]]
) -> list[list[tuple[int, float]]]:
    """The topic vector hits less the stale topics': a topic's vector is made from its
    summary, which holds a since edited message's old words until it is summarised again
    (full-text search leaves that summary out too); its messages are found by their new
    words meanwhile."""
    stale = {topic["id"] for topic in store.topics.stale(user_id)}
    return [[hit for hit in hits if hit[0] not in stale] for hits in found] if stale else found


def message_vector_ids(hits: Hits) -> list[list[int]]:
    return [[i for i, _ in found] for found in hits.vectors["messages"]]


def searched_messages(
    store: Store, user_id: int, query: str, limit: int
) -> tuple[str, list[tuple[int, float]]]:
    """BM25 over the user's archived conversation: the query searched and its hits,
    (message id, score), best first.

    When the query names some of the hits' authors but not all (`named_speakers`), the
    hits are those of the query without the names: a person's name is written by the
    others, who address them by it, so it would rank their lines over the named
    person's own (`nodes.response.ranking.speakers`). A query with no capitalised word names
    nobody, so the hits' authors are not read."""
    found = store.messages.search(user_id, query, limit)
    if not name_stems(query):
        return query, found
    named = named_speakers(
        [query], store.messages.authors_of(user_id, [i for i, _ in found]).values()
    )
    rest = without_names(query, named) if named else None
    return (rest, store.messages.search(user_id, rest, limit)) if rest else (query, found)


def evidence_search(
    store: Store, context: ResponseContext, query: str, found: list[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The hits of `query` for the context's evidence: the deeper list of
    `excerpt_text_pool` hits ranked again, long messages by their best passage
    (`passage_ranked`). `found` (its best page) itself with no pool or no passages, or
    when no message of that page is longer than a passage: a memory of short messages
    pays for no deeper search."""
    tuning, user_id = context.tuning, context.user_id
    limit, chars = tuning.message_hits_count, tuning.excerpt_passage_chars
    if not found or tuning.excerpt_text_pool <= limit or chars <= 0:
        return found
    if not store.messages.contents(user_id, [i for i, _ in found], longer_than=chars):
        return found
    pool = found
    if len(found) >= limit:
        pool = store.messages.search(user_id, query, tuning.excerpt_text_pool)
    texts = store.messages.contents(user_id, [i for i, _ in pool])
    return passage_ranked(found, pool, texts, query, chars, limit)


DATED_READ = 2_000
"""Messages read per day or month a question names, at most (ids only)."""


def dated_messages(
    store: Store, context: ResponseContext, queries: Sequence[str], found: Sequence[Sequence[int]]
) -> list[int]:
    """The user's archived messages written on the days and in the months the queries
    name (`nodes.response.ranking.dates`, in the turn's time zone), at most `message_hits_count`:
    those the other lists `found` first (by their best rank there), then the rest in the
    order they were written. A date in a question says when the thing asked about was
    said, whatever words it was said in."""
    moment = turn_moment(context)
    periods = dict.fromkeys(period for query in queries for period in named_periods(query, moment))
    written: dict[int, None] = {}
    for start, end in periods:
        ids = store.messages.written_between(
            context.user_id, start.timestamp(), end.timestamp(), DATED_READ
        )
        written.update(dict.fromkeys(ids))
    if not written:
        return []
    best: dict[int, int] = {}
    for hits in found:
        for rank, message_id in enumerate(hits):
            if message_id in written and rank < best.get(message_id, rank + 1):
                best[message_id] = rank
    order = {message_id: index for index, message_id in enumerate(written)}
    ranked = sorted(written, key=lambda i: (best.get(i, len(order)), order[i]))
    return ranked[: context.tuning.message_hits_count]
