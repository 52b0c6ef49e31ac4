"""The relevance gate: whether a search's best hits show memory holds anything on a turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.hits import Hits
from nodes.response.ranking.floors import (
    best_scores,
    clears_floor,
    floors_of,
    message_curve,
    name_words,
    topic_curve,
    written_as_a_name,
)


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
