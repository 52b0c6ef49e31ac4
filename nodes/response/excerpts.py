"""Which messages of the recalled topics fill the budget when they do not all fit.

Every message is scored by Reciprocal Rank Fusion of its topic's rank, its ranks in the
turn's full-text, vector and dated message lists, and a share of the votes of the hits
near it (in its topic, and forward across a topic's bound to the next speaker's replies);
the best full-text hits lead. The weights are the run's `Tuning` (`excerpt_*`). A long
message is shown by its passages most like the question (`nodes.response.passages`).
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
from nodes.response.passages import (
    CUT,
    Item,
    PassageScores,
    cut_line,
    long_messages,
    passage_order,
)
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
    go by fused score (`message_scores`), ties by topic rank, then conversation order;
    the first `vector_lead` vector hits lead beside them, each at its rank (a full-text
    hit first on a tie). A
    hit among `unnamed` (`unnamed_authors`) only lends its neighbours their share, and
    never leads; nor does a dated message. `answers` (the assistant's
    long answers, `long_answers`) never lead and come after every other message, in the
    same order among themselves.
    """
    lead = scoring.pop("lead", packaged_tuning().excerpt_lead_hits)
    vector_lead = scoring.pop("vector_lead", packaged_tuning().excerpt_vector_lead_hits)
    score, place = message_scores(topics, hit_lists, k, unnamed=unnamed, **scoring)

    def best(lists: Sequence[Sequence[int]], count: int) -> list[tuple[int, int]]:
        ranked = sorted(
            (rank, index, message_id)
            for index, hits in enumerate(lists)
            for rank, message_id in enumerate(hits)
            if message_id in place and message_id not in unnamed and message_id not in answers
        )
        chosen = list(dict.fromkeys(message_id for _, _, message_id in ranked))[:count]
        first = {message_id: rank for rank, _, message_id in reversed(ranked)}
        return [(first[message_id], message_id) for message_id in chosen]

    led = best(hit_lists, lead)
    led += best(scoring.get("vector_lists", ()), vector_lead)
    leading = list(dict.fromkeys(message_id for _, message_id in sorted(led, key=lambda x: x[0])))
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
        "vector_lead": tuning.excerpt_vector_lead_hits,
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
    cut: Collection[int] = frozenset(),
) -> list[tuple[int, int]]:
    """`rank_topic_messages` over topics given with their messages, under `context`'s
    weights, with the authors `queries` leave out (`left_out`): the order the context's
    excerpts and the memory-only answer's quotes take messages in. A long answer among
    `cut` (shown by passages) keeps its rank when `excerpt_passages_in_place` says so."""
    rows = {m["id"]: Member.of(m) for _, messages in members for m in messages}
    answers = long_answers([m for _, messages in members for m in messages], context)
    if (context.tuning if context is not None else packaged_tuning()).excerpt_passages_in_place:
        answers = answers - frozenset(cut)
    return rank_topic_messages(
        [(topic_id, [m["id"] for m in messages]) for topic_id, messages in members],
        hit_lists,
        k,
        vector_lists=vector_lists,
        dated=dated,
        **speaker_rules(context, queries, list(rows.values())),
        **ranking_weights(context),
        answers=answers,
    )


def rank_items(
    members: Sequence[tuple[int, Sequence[MessageRow]]],
    hit_lists: Sequence[Sequence[int]],
    k: int,
    scores: PassageScores | None,
    **ranking: Any,
) -> tuple[list[Item], dict[int, list[str]]]:
    """`rank_members`' order with long messages shown by passages (`passage_order`, their
    passages scored by `scores`; None: every message whole), and those passages."""
    tuning = (ranking.get("context") or ResponseContext(user_id=0)).tuning
    rows = {m["id"]: m for _, messages in members for m in messages}
    passages = (
        long_messages(rows, tuning.excerpt_long_answer_chars, tuning.excerpt_passage_chars)
        if scores is not None
        else {}
    )
    ranked = rank_members(members, hit_lists, k, cut=frozenset(passages), **ranking)
    if not passages or scores is None:
        return [(topic_id, message_id, None) for topic_id, message_id in ranked], {}
    return passage_order(ranked, passages, scores), passages


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
    scores: PassageScores | None = None,
) -> tuple[list[int], dict[int, str]]:
    """The user's topics among `topic_ids` cut to their most relevant messages.

    Returns the topics that keep something (in the given order) and an excerpt for each
    topic shown in part; topics absent from the excerpts are shown whole. A topic with
    an excerpt in `given` (the reranker's) keeps it and takes its room first. Ids of
    other users' topics (and unknown ids) are skipped. `context` gives the ranking's
    weights (`excerpt_*`; None: the defaults); `queries` (the turn's) say whose messages
    the question is about (`unnamed_authors`); `dated` are the messages written when it
    says (the search's `evidence["dated"]`); `scores` rank the passages of long messages,
    which are then shown by their relevant passages (`nodes.response.passages`; None:
    every message whole).
    """
    given = dict(given or {})
    topics = store.topics.by_ids(user_id, list(dict.fromkeys(topic_ids)))
    headers = {
        topic["id"]: (len(excerpt_header(topic)), len(topic_header(topic))) for topic in topics
    }
    members: list[tuple[int, list[MessageRow]]] = []
    used = 0
    for topic_id in headers:
        if topic_id in given:
            used += headers[topic_id][0] + BLOCK_CHARS + len(given[topic_id])
        else:
            members.append((topic_id, store.messages.of_topic(user_id, topic_id)))
    items, passages = rank_items(
        members,
        hit_lists,
        k,
        scores,
        vector_lists=vector_lists,
        context=context,
        queries=queries,
        dated=dated,
    )
    fitted = Fitting(members, passages, headers, used)
    for item in items:
        fitted.add(item, max_chars)
    excerpts = dict(given)
    for topic_id, messages in members:
        shown = [m for m in messages if fitted.line(m) is not None]
        if shown and len(fitted.whole[topic_id]) < len(messages):
            excerpts[topic_id] = "\n".join(fitted.line(m) or "" for m in shown)
    kept = [t for t in headers if t in given or t in fitted.opened]
    return kept, excerpts


class Fitting:
    """What of the ranked items fits a budget of characters (`relevant_excerpts`): a topic
    costs its short header when first shown and its full one when it becomes whole; a
    message costs its line, a passage its text (and the line's label, for a message's
    first). An item that does not fit is skipped: a shorter one further down may."""

    def __init__(
        self,
        members: Sequence[tuple[int, Sequence[MessageRow]]],
        passages: Mapping[int, Sequence[str]],
        headers: Mapping[int, tuple[int, int]],
        used: int,
    ) -> None:
        self.rows = {m["id"]: m for _, messages in members for m in messages}
        self.lines = {i: transcript([m]) for i, m in self.rows.items()}
        self.sizes = {topic_id: len(messages) for topic_id, messages in members}
        self.passages = passages
        self.headers = headers
        self.used = used
        self.whole: dict[int, set[int]] = defaultdict(set)
        self.parts: dict[int, set[int]] = defaultdict(set)
        self.opened: set[int] = set()
        self.complete: set[int] = set()

    def add(self, item: Item, max_chars: int) -> None:
        topic_id, message_id, index = item
        if index is None:
            cost, completes = len(self.lines[message_id]) + 1, True
        else:
            label = len(self.lines[message_id]) - len(self.rows[message_id]["content"])
            cost = len(self.passages[message_id][index]) + 2 * len(CUT) + 2
            cost += 0 if self.parts[message_id] else label + 1
            completes = len(self.parts[message_id]) + 1 == len(self.passages[message_id])
        short, full = self.headers[topic_id]
        if topic_id not in self.opened:
            cost += short + BLOCK_CHARS
        if completes and len(self.whole[topic_id]) + 1 == self.sizes[topic_id]:
            cost += full - short  # the topic becomes whole: its full header
        if self.used + cost > max_chars:
            return
        self.used += cost
        self.opened.add(topic_id)
        if index is not None:
            self.parts[message_id].add(index)
        if completes:
            self.whole[topic_id].add(message_id)
            self.complete.add(message_id)

    def line(self, message: MessageRow) -> str | None:
        """The message's line as shown (in part: its chosen passages), None if not shown."""
        message_id = message["id"]
        if message_id in self.complete:
            return self.lines[message_id]
        if self.parts.get(message_id):
            return cut_line(message, self.passages[message_id], self.parts[message_id])
        return None
