"""How relevant each message of the recalled topics is to a turn.

Every message is scored by Reciprocal Rank Fusion of its topic's rank, its ranks in the
turn's full-text, vector and dated message lists, and a share of the votes of the hits
near it (in its topic, and forward across a topic's bound to the next speaker's replies).
A topic is as relevant as its best message (`by_best_message`). Pure functions of ids,
rows and weights: the callers read the stores.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from core.records import Member, MessageRow
from core.tuning import Tuning, packaged_tuning
from nodes.response.ranking.weights import Ranking
from nodes.shared.clock import ends_sitting


def rank_topic_messages(
    topics: Sequence[tuple[int, Sequence[int]]],
    hit_lists: Sequence[Sequence[int]],
    k: int,
    *,
    unnamed: Collection[int] = frozenset(),
    answers: Collection[int] = frozenset(),
    rules: Collection[int] = frozenset(),
    preferences: Collection[int] = frozenset(),
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
    same order among themselves. The first `rule_lead` of `rules` (the user's standing
    instructions, `standing_rules`), in that order, come before everything, and after
    them `preferences` (the user's stated preferences, for a request for advice:
    `nodes.response.ranking.preferences`) in the places left of those `rule_lead`.
    """
    lead = scoring.pop("lead", packaged_tuning().excerpt_lead_hits)
    vector_lead = scoring.pop("vector_lead", packaged_tuning().excerpt_vector_lead_hits)
    rule_lead = scoring.pop("rule_lead", packaged_tuning().excerpt_rule_hits)
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
    ruling = [message_id for message_id in ranked if message_id in rules][:rule_lead]
    ruling += [m for m in ranked if m in preferences and m not in ruling][: rule_lead - len(ruling)]
    ranked = ruling + [message_id for message_id in ranked if message_id not in ruling]
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
    packaged profile's (`Ranking.score_weights`: vector_weight, neighbour_hits, _weight, _reach)."""
    chosen = {**Ranking().score_weights(), **weights}
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
    messages: Iterable[Member], ranking: Ranking | None = None
) -> dict[int, list[tuple[int, int]]]:
    """{id: [(reply id, places after it)]}: for each of `messages`, the ones after it that
    another speaker wrote (by author, else role), up to `excerpt_neighbour_reach` places
    on, while the conversation runs on without a gap (every message in between among
    `messages`), without a pause that ends a sitting (`ends_sitting`) and without time
    going back (an older conversation stored later). `ranking` gives the pauses and
    the reach (None: the defaults).

    The splitter's bounds are a judgement about subjects and can fall between a question
    and its answer: the question that closes one topic is answered by the messages that
    open the next. So a hit's share crosses a topic's bound (`message_scores`), but only
    forward, to what someone else said next (a reply), and never past a sitting's end
    (after a night the next message is a new day's greeting, not a reply)."""
    run = ranking or Ranking()
    ordered = sorted(messages, key=lambda member: member.seq)
    last = [len(ordered) - 1] * len(ordered)  # the index where each one's stretch ends
    for index in range(len(ordered) - 2, -1, -1):
        earlier, later = ordered[index], ordered[index + 1]
        gap = later.ts - earlier.ts
        joined = later.seq == earlier.seq + 1 and gap >= 0
        if joined and not ends_sitting(gap, interval_s=run.interval_s, max_gap_s=run.max_gap_s):
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


def long_answers(rows: Iterable[MessageRow], tuning: Tuning | None = None) -> frozenset[int]:
    """The assistant's long answers among `rows` (over `excerpt_answer_last_chars`; None:
    the default). The user's own messages hold what the user said, did and decided; a
    long answer is advice built on them, and costs the room of many of them. A short
    reply ("Yes, book the 9:40 train") keeps its rank: it is what was agreed."""
    limit = (tuning or packaged_tuning()).excerpt_answer_last_chars
    return frozenset(
        row["id"] for row in rows if row["role"] == "assistant" and len(row["content"]) > limit
    )


_PAST_EN = (
    r"(?:been|had|was|were|did|done|knew|known|heard|seen|saw|got|gotten|felt|went|gone|made"
    r"|found|told|said|came|ate|took|taken|thought|bought|brought|taught|caught"
    r"|\w+(?:ied|ted|ved|ked|sed|ned|red|ped))\b"
)
_PAST_RU = r"(?:не\s+)?\w*(?:л|ла|ло|ли)\b"
STANDING_RULE = re.compile(
    r"^\s*(please\s+)?(always|never(?!\s+mind)|from now on|don'?t ever)\b"
    rf"(?![ \t,]+{_PAST_EN})"
    r"|^\s*(пожалуйста,?\s+)?(всегда|никогда|впредь|отныне)\b"
    rf"(?![ \t,]+{_PAST_RU})",
    re.IGNORECASE,
)
"""A message that opens with a standing instruction: "Always format dates as …", "Never
…" (not "Never mind"), "From now on …", "Всегда отвечай …", "Впредь …". An opener followed
by a verb in the past tells what was, not what to do ("Never been to Paris …", "Always
wanted …", "Никогда не был …", "Всегда ли …?"): no instruction."""


def standing_rules(rows: Iterable[MessageRow], near: Collection[int]) -> frozenset[int]:
    """The user's standing instructions among `rows` (`STANDING_RULE`) that are among
    `near` (the turn's message hits). An instruction holds for every later turn on its
    subject, and its words are seldom the question's ("Always give status codes when I ask
    about API errors" for "What goes wrong with a REST call?"): so one the turn's hits
    reach leads, where its fused score would leave it behind the subject's long messages."""
    return frozenset(
        row["id"]
        for row in rows
        if row["id"] in near and row["role"] == "user" and STANDING_RULE.search(row["content"])
    )


def by_best_message(
    members: Sequence[tuple[int, Sequence[int]]], score: dict[int, float]
) -> list[tuple[int, float]]:
    """(topic id, its best message's score) for `members` ((topic id, its message ids),
    in fused order), best first; ties keep the fused order, a topic with no scored
    message scores 0."""
    best = [
        (topic_id, max((score[m] for m in message_ids if m in score), default=0.0))
        for topic_id, message_ids in members
    ]
    return sorted(best, key=lambda item: -item[1])  # stable: ties in fused order
