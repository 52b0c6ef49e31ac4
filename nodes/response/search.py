"""Search: hybrid candidates for one turn, for the current user only (seeds 000, 001, 004).

Topic candidates come from ranked lists fused by Reciprocal Rank Fusion (k=60), each query
(the raw message and the enriched one) contributing its own lists:

- topic vectors at or above `topics_threshold` (cosine of "summary + conversation log");
- BM25 over topic summaries;
- BM25 over messages and message vectors: every archived message hit votes for its topic
  at the hit's rank.

Why message vectors: with the local USE embedder a short question rarely reaches 0.60
against a whole topic's vector (on the example session no question does), while the one
message that holds the answer ranks near the top of the message list. Facts and people
are candidates by vector similarity alone.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Sequence

from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.metrics import SEARCH_RESULTS
from core.ports import VectorKind
from core.state import FactCandidate, PersonCandidate, ResponseState, TopicCandidate
from nodes.response.topic_content import topic_date


def rrf_scores(ranked_lists: Iterable[Sequence[int]], k: int) -> dict[int, float]:
    """Reciprocal Rank Fusion: each appearance at 1-based rank r adds 1 / (k + r).

    An id may appear more than once in a list (several messages of one topic): each
    appearance is a vote.
    """
    scores: dict[int, float] = defaultdict(float)
    for ranked in ranked_lists:
        for rank, item in enumerate(ranked, start=1):
            scores[item] += 1.0 / (k + rank)
    return dict(scores)


def search_queries(text: str, enriched: str | None) -> list[str]:
    """The distinct, non-empty queries of a turn: the raw message first."""
    queries: dict[str, str] = {}
    for query in (text, enriched or ""):
        key = " ".join(query.split()).casefold()
        if key:
            queries.setdefault(key, query.strip())
    return list(queries.values())


def topic_candidates(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> list[TopicCandidate]:
    """The user's topics by fused score, best first, at most `retrieved_topics_count`."""
    return topic_search(deps, context, queries)[0]


def topic_search(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> tuple[list[TopicCandidate], list[list[int]]]:
    """The user's topics by fused score, and each query's full-text message hits.

    The threshold decides whether a topic vector hit enters the fusion; `vector_score`
    reports the topic's best cosine among the nearest topics either way (ties broken by it).
    The message hits (ids, best first, per query) are what `nodes.excerpts` ranks the
    recalled topics' messages with.
    """
    store, vectors, user_id = deps.store, deps.vectors, context.user_id
    ranked_lists: list[list[int]] = []
    cosine: dict[int, float] = {}
    message_lists: list[list[int]] = []
    text_hits: list[list[int]] = []
    for query in queries:
        vector = deps.embedder.encode_query(query)
        topic_hits = vectors.query("topics", user_id, vector, context.retrieved_topics_count)
        for topic_id, similarity in topic_hits:
            cosine[topic_id] = max(similarity, cosine.get(topic_id, similarity))
        threshold = context.topics_threshold
        ranked_lists.append([i for i, similarity in topic_hits if similarity >= threshold])
        ranked_lists.append(
            [i for i, _ in store.topics.search(user_id, query, context.retrieved_topics_count)]
        )
        message_lists.append(
            [i for i, _ in vectors.query("messages", user_id, vector, context.message_hits_count)]
        )
        text_hits.append(
            [i for i, _ in store.messages.search(user_id, query, context.message_hits_count)]
        )
        message_lists.append(text_hits[-1])
    topic_of = {
        row["id"]: row["topic_id"]
        for row in store.messages.by_ids(user_id, sorted({i for ids in message_lists for i in ids}))
    }
    for message_ids in message_lists:
        # Unarchived messages (the conversation going on) have no topic to vote for.
        ranked_lists.append([topic_of[i] for i in message_ids if topic_of.get(i) is not None])
    scores = rrf_scores(ranked_lists, context.rrf_k)
    ranked = sorted(scores, key=lambda i: (-scores[i], -cosine.get(i, 0.0), i))
    topics = store.topics.by_ids(user_id, ranked[: context.retrieved_topics_count])
    candidates = [
        TopicCandidate(
            id=topic["id"],
            summary=topic["summary"],
            date=topic_date(topic),
            message_count=topic["message_count"],
            size_chars=topic["size_chars"],
            score=scores[topic["id"]],
            vector_score=cosine.get(topic["id"]),
        )
        for topic in topics
    ]
    return candidates, text_hits


def nearest_records(
    deps: Deps, kind: VectorKind, context: ResponseContext, queries: Sequence[str]
) -> dict[int, float]:
    """The user's facts or people nearest to any query, at or above the kind's threshold:
    {id: best cosine}, best first."""
    limit, threshold = {
        "facts": (context.fact_candidates_count, context.facts_threshold),
        "people": (context.people_candidates_count, context.people_threshold),
    }[kind]
    best: dict[int, float] = {}
    for query in queries:
        vector = deps.embedder.encode_query(query)
        for record_id, similarity in deps.vectors.query(kind, context.user_id, vector, limit):
            if similarity >= threshold:
                best[record_id] = max(similarity, best.get(record_id, similarity))
    return dict(sorted(best.items(), key=lambda item: -item[1]))


def fact_candidates(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> list[FactCandidate]:
    score = nearest_records(deps, "facts", context, queries)
    facts = deps.store.facts.by_ids(context.user_id, list(score))
    fields = ("id", "content", "type", "importance")
    return [FactCandidate(**{k: f[k] for k in fields}, score=score[f["id"]]) for f in facts]


def person_description(circle: str | None, aliases: Sequence[str], bio: str | None) -> str:
    parts = [circle or "", f"aka {', '.join(aliases)}" if aliases else "", bio or ""]
    return "; ".join(part for part in parts if part)


def people_candidates(
    deps: Deps, context: ResponseContext, queries: Sequence[str]
) -> list[PersonCandidate]:
    score = nearest_records(deps, "people", context, queries)
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
    full-text message hits the context assembly picks topic excerpts with."""
    candidates, text_hits = topic_search(deps, context, queries)
    return {
        "candidates": candidates,
        "message_hits": text_hits,
        "people_candidates": people_candidates(deps, context, queries),
        "fact_candidates": fact_candidates(deps, context, queries),
    }


def make_search(deps: Deps):
    async def search(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        queries = search_queries(state["text"], state.get("query"))
        found = await asyncio.to_thread(hybrid_search, deps, runtime.context, queries)
        SEARCH_RESULTS.observe(len(found["candidates"]))
        return found

    return search
