"""Which messages of the recalled topics fill the budget when they do not all fit.

Every message is scored by Reciprocal Rank Fusion of its topic's rank, its ranks in the
turn's full-text, vector and dated message lists, and a share of the votes of the hits
near it (in its topic, and forward across a topic's bound to the next speaker's replies);
the best full-text hits lead. The weights are the run's `Tuning` (`excerpt_*`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from core.context import ResponseContext
from core.ports import Store
from core.records import Member, MessageRow
from core.text import transcript
from core.tuning import packaged_tuning
from nodes.response.speakers import unnamed_authors
from nodes.response.topic_content import excerpt_header, topic_header
from nodes.shared.clock import ends_sitting

BLOCK_CHARS = 4
"""A topic block's characters besides its header and lines: the blank line after the
header and the blank line between blocks (`render_topics_content`)."""


def left_out(
    context: ResponseContext | None, queries: Sequence[str], authors: Mapping[int, str | None]
) -> frozenset[int]:
    """`unnamed_authors`, unless the run's context turns it off (`excerpt_named_speakers`)."""
    if context is not None and not context.tuning.excerpt_named_speakers:
        return frozenset()
    return unnamed_authors(queries, authors)


def rank_topic_messages(
    topics: Sequence[tuple[int, Sequence[int]]],
    hit_lists: Sequence[Sequence[int]],
    k: int,
    *,
    unnamed: Collection[int] = frozenset(),
    answers: Collection[int] = frozenset(),
    **scoring: Any,
) -> list[tuple[int, int]]:
    """(topic id, message id) for every message of `topics`, most relevant first.

    `topics` are (topic id, its message ids in conversation order), best topic first;
    `hit_lists` are ranked message-id lists (full-text hits per query); `scoring` are
    `message_scores`' other weights and lists (the vector hits, the dated messages). The
    first `lead` are the topics' best full-text hits (by rank, then list order); the rest
    go by fused score (`message_scores`), ties by topic rank, then conversation order. A
    hit among `unnamed` (`unnamed_authors`) only lends its neighbours their share, and
    never leads; nor does a dated message or a vector hit. `answers` (the assistant's
    long answers, `long_answers`) never lead and come after every other message, in the
    same order among themselves.
    """
    lead = scoring.pop("lead", packaged_tuning().excerpt_lead_hits)
    score, place = message_scores(topics, hit_lists, k, unnamed=unnamed, **scoring)
    best_hits = sorted(
        (rank, index, message_id)
        for index, hits in enumerate(hit_lists)
        for rank, message_id in enumerate(hits)
        if message_id in place and message_id not in unnamed and message_id not in answers
    )
    leading = list(dict.fromkeys(message_id for _, _, message_id in best_hits))[:lead]
    rest = sorted(
        set(place) - set(leading),
        key=lambda message_id: (message_id in answers, -score[message_id], place[message_id]),
    )
    ranked = leading + rest
    return [(topics[place[message_id][0]][0], message_id) for message_id in ranked]


def message_scores(
    topics: Sequence[tuple[int, Sequence[int]]],
    hit_lists: Sequence[Sequence[int]],
    k: int,
    *,
    vector_lists: Sequence[Sequence[int]] = (),
    unnamed: Collection[int] = frozenset(),
    dated: Sequence[int] = (),
    replies: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    **weights: float,
) -> tuple[dict[int, float], dict[int, tuple[int, int]]]:
    """The fused score of every message of `topics`, and its place: (index of its topic
    in `topics`, its index in the topic).

    `topics` are (topic id, its message ids in conversation order), best topic first;
    `hit_lists` are ranked message-id lists (full-text hits per query), `vector_lists`
    the vector hits, voting at `vector_weight`; ids outside the topics are ignored. A hit
    among `unnamed` only lends its neighbours their share. `dated` (the messages written
    when the question says) votes as a full-text list does. A hit's share goes to the
    messages beside it in its topic, and to its replies in a later topic (`replies`:
    message id to (reply id, places after it), `replies_after`). `weights` override the
    packaged profile's (`ranking_weights`: vector_weight, neighbour_hits, _weight, _reach)."""
    chosen = {**ranking_weights(None), **weights}
    vector_weight, neighbour_weight = chosen["vector_weight"], chosen["neighbour_weight"]
    neighbour_hits, neighbour_reach = int(chosen["neighbour_hits"]), int(chosen["neighbour_reach"])
    score: dict[int, float] = defaultdict(float)
    place: dict[int, tuple[int, int]] = {}
    for topic_rank, (_, message_ids) in enumerate(topics, start=1):
        for index, message_id in enumerate(message_ids):
            place.setdefault(message_id, (topic_rank - 1, index))
            score[message_id] += 1.0 / (k + topic_rank)
    replies = replies or {}
    weighted = [(1.0, hits) for hits in [*hit_lists, dated]]
    weighted += [(vector_weight, hits) for hits in vector_lists if vector_weight]
    for weight, hits in weighted:
        for hit_rank, message_id in enumerate(hits, start=1):
            if message_id not in place:
                continue
            vote = weight / (k + hit_rank)
            if message_id not in unnamed:
                score[message_id] += vote
            if hit_rank > neighbour_hits:
                continue
            topic_index, index = place[message_id]
            members = topics[topic_index][1]
            for distance in range(1, neighbour_reach + 1):
                share = neighbour_weight**distance * vote
                for neighbour in (index - distance, index + distance):
                    if 0 <= neighbour < len(members):
                        score[members[neighbour]] += share
            for reply, distance in replies.get(message_id, ()):
                if reply in place and place[reply][0] != topic_index:
                    score[reply] += neighbour_weight**distance * vote
    return dict(score), place


def replies_after(
    messages: Iterable[Member], context: ResponseContext | None = None
) -> dict[int, list[tuple[int, int]]]:
    """{id: [(reply id, places after it)]}: for each of `messages`, the ones after it that
    another speaker wrote (by author, else role), up to `excerpt_neighbour_reach` places
    on, while the conversation runs on without a gap (every message in between among
    `messages`), without a pause that ends a sitting (`ends_sitting`) and without time
    going back (an older conversation stored later). `context` gives the thresholds
    (None: the defaults).

    The splitter's bounds are a judgement about subjects and can fall between a question
    and its answer: the question that closes one topic is answered by the messages that
    open the next. So a hit's share crosses a topic's bound (`message_scores`), but only
    forward, to what someone else said next (a reply), and never past a sitting's end
    (after a night the next message is a new day's greeting, not a reply)."""
    run = context or ResponseContext(user_id=0)
    ordered = sorted(messages, key=lambda member: member.seq)
    last = [len(ordered) - 1] * len(ordered)  # the index where each one's stretch ends
    for index in range(len(ordered) - 2, -1, -1):
        earlier, later = ordered[index], ordered[index + 1]
        gap = later.ts - earlier.ts
        joined = later.seq == earlier.seq + 1 and gap >= 0
        if joined and not ends_sitting(
            gap, interval_s=run.chunk_interval_s, max_gap_s=run.topic_max_gap_s
        ):
            last[index] = last[index + 1]
        else:
            last[index] = index
    ids = [member.id for member in ordered]
    speakers = [member.speaker for member in ordered]
    replies: dict[int, list[tuple[int, int]]] = {}
    for index, speaker in enumerate(speakers):
        stop = min(index + run.tuning.excerpt_neighbour_reach, last[index]) + 1
        found = [
            (ids[later], later - index)
            for later in range(index + 1, stop)
            if speakers[later] != speaker
        ]
        if found:
            replies[ids[index]] = found
    return replies


def long_answers(rows: Iterable[MessageRow], context: ResponseContext | None) -> frozenset[int]:
    """The assistant's long answers among `rows` (over `excerpt_long_answer_chars`; None:
    the default). The user's own messages hold what the user said, did and decided; a
    long answer is advice built on them, and costs the room of many of them."""
    limit = (context or ResponseContext(user_id=0)).tuning.excerpt_long_answer_chars
    return frozenset(
        row["id"] for row in rows if row["role"] == "assistant" and len(row["content"]) > limit
    )


def speaker_rules(
    context: ResponseContext | None, queries: Sequence[str], members: Sequence[Member]
) -> dict[str, Any]:
    """`message_scores`' `unnamed` and `replies` for `members` (the ranked messages): the
    hits that only lend their share (`left_out`) and the replies a hit's share reaches
    across a topic's bound (`replies_after`)."""
    return {
        "unnamed": left_out(context, queries, {member.id: member.author for member in members}),
        "replies": replies_after(members, context),
    }


def ranking_weights(context: ResponseContext | None) -> dict[str, float]:
    """`rank_topic_messages`' keyword weights from a run's context (None: the packaged
    profile's)."""
    tuning = context.tuning if context is not None else packaged_tuning()
    return {
        "lead": tuning.excerpt_lead_hits,
        "vector_weight": tuning.excerpt_vector_weight,
        "neighbour_hits": tuning.excerpt_neighbour_hits,
        "neighbour_weight": tuning.excerpt_neighbour_weight,
        "neighbour_reach": tuning.excerpt_neighbour_reach,
    }


def rank_members(
    members: Sequence[tuple[int, Sequence[MessageRow]]],
    hit_lists: Sequence[Sequence[int]],
    k: int,
    *,
    vector_lists: Sequence[Sequence[int]] = (),
    context: ResponseContext | None = None,
    queries: Sequence[str] = (),
    dated: Sequence[int] = (),
) -> list[tuple[int, int]]:
    """`rank_topic_messages` over topics given with their messages, under `context`'s
    weights, with the authors `queries` leave out (`left_out`): the order the context's
    excerpts and the memory-only answer's quotes take messages in."""
    rows = {m["id"]: Member.of(m) for _, messages in members for m in messages}
    return rank_topic_messages(
        [(topic_id, [m["id"] for m in messages]) for topic_id, messages in members],
        hit_lists,
        k,
        vector_lists=vector_lists,
        dated=dated,
        **speaker_rules(context, queries, list(rows.values())),
        **ranking_weights(context),
        answers=long_answers([m for _, messages in members for m in messages], context),
    )


def relevant_excerpts(
    store: Store,
    user_id: int,
    topic_ids: Sequence[int],
    hit_lists: Sequence[Sequence[int]],
    max_chars: int,
    k: int,
    *,
    given: Mapping[int, str] | None = None,
    vector_lists: Sequence[Sequence[int]] = (),
    context: ResponseContext | None = None,
    queries: Sequence[str] = (),
    dated: Sequence[int] = (),
) -> tuple[list[int], dict[int, str]]:
    """The user's topics among `topic_ids` cut to their most relevant messages.

    Returns the topics that keep something (in the given order) and an excerpt for each
    topic shown in part; topics absent from the excerpts are shown whole. A topic with
    an excerpt in `given` (the reranker's) keeps it and takes its room first. Ids of
    other users' topics (and unknown ids) are skipped. `context` gives the ranking's
    weights (`excerpt_*`; None: the defaults); `queries` (the turn's) say whose messages
    the question is about (`unnamed_authors`); `dated` are the messages written when it
    says (the search's `evidence["dated"]`).
    """
    given = dict(given or {})
    topics = store.topics.by_ids(user_id, list(dict.fromkeys(topic_ids)))
    header_chars = {topic["id"]: len(excerpt_header(topic)) + BLOCK_CHARS for topic in topics}
    whole_header_chars = {topic["id"]: len(topic_header(topic)) + BLOCK_CHARS for topic in topics}
    members: list[tuple[int, list[MessageRow]]] = []
    used = 0
    for topic_id in header_chars:
        if topic_id in given:
            used += header_chars[topic_id] + len(given[topic_id])
        else:
            members.append((topic_id, store.messages.of_topic(user_id, topic_id)))
    lines = {m["id"]: transcript([m]) for _, messages in members for m in messages}
    ranked = rank_members(
        members,
        hit_lists,
        k,
        vector_lists=vector_lists,
        context=context,
        queries=queries,
        dated=dated,
    )
    sizes = {topic_id: len(messages) for topic_id, messages in members}
    kept: dict[int, set[int]] = defaultdict(set)
    for topic_id, message_id in ranked:
        cost = len(lines[message_id]) + 1
        shown_before = len(kept.get(topic_id, ()))
        if not shown_before:
            cost += header_chars[topic_id]
        if shown_before + 1 == sizes[topic_id]:  # the topic becomes whole: its full header
            cost += whole_header_chars[topic_id] - header_chars[topic_id]
        if used + cost > max_chars:
            continue  # a shorter message further down may still fit
        kept[topic_id].add(message_id)
        used += cost
    excerpts = dict(given)
    for topic_id, messages in members:
        chosen = kept.get(topic_id)
        if chosen and len(chosen) < len(messages):
            excerpts[topic_id] = "\n".join(
                lines[message["id"]] for message in messages if message["id"] in chosen
            )
    shown = [t for t in header_chars if t in given or kept.get(t)]
    return shown, excerpts
