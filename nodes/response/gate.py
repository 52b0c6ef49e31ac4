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
    same_script,
    topic_curve,
    word_share_curve,
    written_as_a_name,
)
from stores.fulltext import query_terms


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
    Over a floor, the question must also share a floor of its content words with memory
    (`word_share`; that floor by the user's size too), unless its nearest message is in
    another script (an English question of a Russian conversation shares no words with
    it). Whatever
    the floors, a name the question shares with memory still makes it relevant, and so
    does a day or month it names that memory holds messages of (`hits.dated`). With the
    vector index down the gate is open: the floors were calibrated on all four signals
    together, and the full-text ones alone would turn away most questions memory holds
    (the turn goes on with full-text search alone, every full-text hit voting)."""
    if not context.relevance_floor or hits.vectors_down or hits.dated:
        return True  # a day or month the question names holds archived messages
    archived = {message_id for message_id, topic_id in topic_of.items() if topic_id is not None}
    signals = hits.signals(archived, message_of)
    best = best_scores(signals)
    if not any(score is not None for score in best.values()):
        return False
    store, user_id = deps.store, context.user_id
    words = word_share_curve(context)
    most_messages, most_topics = message_curve(context).saturation, topic_curve(context).saturation
    messages = store.messages.archived_count(user_id, max(most_messages, words.saturation))
    if not clears_floor(best, floors_of(context, most_messages, most_topics)):
        topics = store.topics.count(user_id, most_topics)
        if not clears_floor(best, floors_of(context, messages, topics)):
            return named_in_memory(deps, user_id, hits.queries)
    floor = words.at(messages)
    documents = "passages" in hits.held
    if floor <= 0 or word_share(deps, user_id, hits.queries, documents) >= floor:
        return True
    nearest = max(signals["message_vectors"], key=lambda hit: hit[1], default=None)
    if nearest is not None and not in_their_script(deps, user_id, hits.queries, nearest[0]):
        return True  # across languages the words say nothing
    return named_in_memory(deps, user_id, hits.queries)


def in_their_script(deps: Deps, user_id: int, queries: Sequence[str], message_id: int) -> bool:
    """Whether the message is written in the script of every query (`same_script`)."""
    rows = deps.store.messages.by_ids(user_id, [message_id])
    return bool(rows) and all(same_script(query, rows[0]["content"]) for query in queries)


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


def word_share(deps: Deps, user_id: int, queries: Sequence[str], documents: bool = True) -> float:
    """The largest share, over the queries, of a query's content words (`query_terms`) that
    the user's archived conversation holds, found through the full-text index (a word as
    it is matched there, by its first letters); 1.0 for a query without content words.
    `documents`: whether the user may hold documents' passages to look in too."""
    terms = [query_terms(query) for query in queries]
    if not terms or not all(terms):
        return 1.0
    held = archived_words(deps, user_id, {word for words in terms for word in words}, documents)
    return max(sum(word in held for word in words) / len(words) for words in terms)


def archived_words(deps: Deps, user_id: int, words: set[str], documents: bool) -> set[str]:
    """Those of `words` one of the user's archived messages, or (with `documents`) a
    document one carried, holds (the conversation going on is not archived yet). One
    statement (two with `documents`): a full-text probe a word, nothing ranked."""
    ordered = sorted(words)
    held = deps.store.messages.archived_holding(user_id, ordered)
    if documents:
        in_documents = deps.store.attachments.archived_holding(user_id, ordered)
        held = [a or b for a, b in zip(held, in_documents, strict=True)]
    return {word for word, holds in zip(ordered, held, strict=True) if holds}
