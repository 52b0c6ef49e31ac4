"""Reciprocal Rank Fusion, and how ranked message hits vote for the topics they belong to."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence


def rrf_scores(ranked_lists: Iterable[Sequence[int | None]], k: int) -> dict[int, float]:
    """Reciprocal Rank Fusion: each appearance at 1-based rank r adds 1 / (k + r).

    An id may appear more than once in a list (several messages of one topic): each
    appearance is a vote. None holds its rank and votes for nothing.
    """
    scores: dict[int, float] = defaultdict(float)
    for ranked in ranked_lists:
        for rank, item in enumerate(ranked, start=1):
            if item is not None:
                scores[item] += 1.0 / (k + rank)
    return dict(scores)


MESSAGE_VOTES_PER_TOPIC = 2
"""How many of a topic's messages vote for it from one ranked list of message hits.

Every vote weighs about the same under RRF's k = 60 (rank 1 adds 1/61, rank 50 adds
1/110), so uncapped, a long topic with many weak matches outvoted a short one holding the
best hits: on LoCoMo the topic of "When did Maria's grandmother pass away?" was first by
topic full text and by message full text and still ranked 17th behind topics of 64, 46
and 18 messages. Two, not one: a conversation answers in pairs, and a question and its
reply often both match; 1, 2, 3 and no cap were measured."""


def topic_votes(
    topics: Sequence[int | None], cap: int = MESSAGE_VOTES_PER_TOPIC
) -> list[int | None]:
    """A list of message hits (their topics, best first; None: not archived) as votes for
    topics: each message votes for its topic at its rank, up to `cap` messages a topic;
    the ones after hold their rank and vote for nothing. Unarchived messages (the
    conversation going on) have no topic to vote for and hold no rank."""
    counts: dict[int, int] = defaultdict(int)
    votes: list[int | None] = []
    for topic_id in topics:
        if topic_id is None:
            continue
        counts[topic_id] += 1
        votes.append(topic_id if counts[topic_id] <= cap else None)
    return votes
