"""Search: hybrid candidates for one turn, for the current user only (seeds 000, 001, 004).

Topic candidates come from ranked lists fused by Reciprocal Rank Fusion (k=60), each query
(the raw message and the enriched one) contributing its own lists:

- topic vectors at or above `topics_threshold` (cosine of "summary + conversation log");
- BM25 over topic summaries;
- BM25 over messages and message vectors: every archived message hit votes for its topic
  at the hit's rank (a question naming some of the conversation's speakers is searched
  without their names: `nodes.response.hits.searched_messages`);
- BM25 over document passages and passage vectors: a passage votes for the topic of the
  message that carried its document;
- the messages written on a day or in a month the question names
  (`nodes.response.hits.dated_messages`), voting for their topics as one more message
  list.

The best `retrieved_topics_count` topics by fused score are then ordered by their best
message (`nodes.response.ranking.recall.order_topics`): the order the reranker reads
them in, and the one its fallback takes the first of. Each message is judged there (and
in the context's excerpts) with a vector list `excerpt_vector_depth` deep, where the
fusion reads only its first `message_hits_count`: a message far down it is evidence of
the message, not a vote for its topic.

Why message vectors: with the local USE embedder a short question rarely reaches 0.60
against a whole topic's vector (on the example session no question does), while the one
message that holds the answer ranks near the top of the message list. Facts and people
are candidates by vector similarity alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.found import Evidence, FactCandidate, Found, PersonCandidate, TopicCandidate
from core.metrics import SEARCH_RESULTS
from core.state import ResponseState
from nodes.response.gate import relevant
from nodes.response.hits import TOPIC_KINDS, Hits, find_hits, message_vector_ids
from nodes.response.ranking.fusion import rrf_scores, topic_votes
from nodes.response.ranking.recall import Recall, order_topics, search_queries
from nodes.response.ranking.weights import Ranking
from nodes.response.topic_content import person_description, topic_date
from nodes.response.vector_reads import VectorReads


def topic_candidates(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> list[TopicCandidate]:
    """The user's topic candidates, best first, at most `retrieved_topics_count` (`fuse_topics`)."""
    return fuse_topics(deps, context, find_hits(deps, context, queries, TOPIC_KINDS))


def fuse_topics(deps: Deps, context: ResponseContext, hits: Hits) -> list[TopicCandidate]:
    """The user's best `retrieved_topics_count` topics by fused score, in the order of
    their best message (`order_topics`); none when the search is not
    `relevant` (the relevance floor).

    The threshold decides whether a topic vector hit enters the fusion; `vector_score`
    reports the topic's best cosine among the nearest topics either way (ties broken by it).
    The message hits (ids, best first, per query; the vector lists deeper than the
    fusion reads them) are what the ranking (`nodes.response.ranking`) ranks the recalled
    topics' messages with, and the candidates' order too. Ids from the vector index count
    only once the user's own rows confirm them (`topics_of`, `topics.by_ids` filter by `user_id`).
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
        message_lists.append([i for i, _ in message_hits[: context.tuning.message_hits_count]])
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
    scores = rrf_scores(ranked_lists, context.tuning.rrf_k)
    fused = sorted(scores, key=lambda i: (-scores[i], -cosine.get(i, 0.0), i))
    top = fused[: context.retrieved_topics_count]
    recall = Recall(
        hits.queries,
        [*hits.message_text, *passages[1::2]],
        [*message_vector_ids(hits), *passages[0::2]],
        hits.dated,
    )
    members = store.messages.members_of(user_id, top)
    ranked = order_topics(members, top, recall, Ranking.of(context))
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
    score = best_above(hits.vectors["facts"], context.tuning.facts_threshold)
    facts = deps.store.facts.by_ids(context.user_id, list(score))
    fields = ("id", "content", "type", "importance")
    return [FactCandidate(**{k: f[k] for k in fields}, score=score[f["id"]]) for f in facts]


def people_candidates(deps: Deps, context: ResponseContext, hits: Hits) -> list[PersonCandidate]:
    score = best_above(hits.vectors["people"], context.tuning.people_threshold)
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
    """The search node's update: in `found`, the queries, the user's topic, people and fact
    candidates, and the full-text and vector message hits the context assembly picks topic
    excerpts with; with the vector store down, what full-text search found, and
    `search_fallback` says so."""
    reads = VectorReads(deps.vectors, context.user_id)
    hits = find_hits(deps, context, queries, (*TOPIC_KINDS, "facts", "people"), reads)
    update: dict[str, Any] = {
        "found": Found(
            queries=list(queries),
            topics=fuse_topics(deps, context, hits),
            people=people_candidates(deps, context, hits),
            facts=fact_candidates(deps, context, hits),
            evidence=Evidence(
                text_hits=hits.evidence_text, vector_hits=message_vector_ids(hits), dated=hits.dated
            ),
        )
    }
    if reads.unavailable is not None:
        update["search_fallback"] = "vectors_unavailable"
    return update


def make_search(deps: Deps):
    async def search(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        queries = search_queries(state["text"], state.get("query"))
        update = await asyncio.to_thread(hybrid_search, deps, runtime.context, queries)
        SEARCH_RESULTS.observe(len(update["found"]["topics"]))
        return update

    return search
