"""Pseudo-relevance feedback: the turn's query vector moved toward its first messages.

A question seldom reads like the line that answers it. "What genre is Joanna's first
screenplay?" shares no word with "It's a mix of drama and romance!", and its vector is
no nearer; the line beside it, "I finally finished my first full screenplay", is what the
full-text hits find. The messages the ranking puts first are mostly on the subject asked
about, so their vectors say what the subject looks like in this conversation: the query's
vector plus `excerpt_feedback_weight` times the mean of the first
`excerpt_feedback_messages` ranked messages' vectors (Rocchio's feedback) finds the
recalled messages on that subject, in the conversation's own words. That order is one
more vector list, and the messages are ranked again with it
(`nodes.response.ranking.recall.rank_items`).

Only a message shown whole speaks for one subject: the standing instructions and stated
preferences that lead whatever the question (`standing_rules`, `stated_preferences`) and
any message longer than one passage (`excerpt_passage_chars`: a long answer covers several
things) are left out of the feedback.

Feedback narrows the ranking toward what its first messages say, which serves a question
after one thing said about a subject. Two kinds of question want something else
(`wants_feedback`): a request for advice (`asks_for_advice`), whose answer the user's
standing instructions and preferences shape, not more lines on the subject; and a yes/no
question about the user's own past ("Have I ever obtained an API key?", "Делал ли я
бэкап?", `nodes.response.ranking.past`), answered by every mention of it, the ones that
contradict the first included.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from core.records import MessageRow
from core.tuning import Tuning
from nodes.response.ranking.past import asks_whether_i
from nodes.response.ranking.preferences import asks_for_advice

MessageVectors = Callable[[Sequence[MessageRow]], np.ndarray]
"""Unit vectors of messages, one row each, in order (`Indexer.message_vectors` for a user)."""


def wants_feedback(queries: Sequence[str]) -> bool:
    """Whether the queries ask for one thing said about a subject: not a request for advice
    (`asks_for_advice`), nor a yes/no question about the user's past (`asks_whether_i`)."""
    return not asks_for_advice(queries) and not asks_whether_i(queries)


def feedback_sources(
    ranked: Sequence[int],
    rows: Mapping[int, MessageRow],
    leading: Collection[int],
    tuning: Tuning,
) -> list[int]:
    """The first `excerpt_feedback_messages` of `ranked` (message ids, most relevant first)
    that speak for the subject: not among `leading` (the instructions and preferences that
    lead whatever the question) and no longer than a passage."""
    limit = tuning.excerpt_passage_chars or tuning.excerpt_long_answer_chars
    chosen = [
        message_id
        for message_id in ranked
        if message_id not in leading and len(rows[message_id]["content"]) <= limit
    ]
    return chosen[: tuning.excerpt_feedback_messages]


def feedback_order(
    query: np.ndarray,
    rows: Sequence[MessageRow],
    sources: Sequence[int],
    vectors: MessageVectors,
    tuning: Tuning,
) -> list[int]:
    """The ids of `rows` by cosine to `query` (a unit vector) moved toward the mean vector
    of `sources` (ids among `rows`), best first, at most `excerpt_vector_depth`; none
    without sources."""
    if not sources or not rows:
        return []
    matrix = vectors(rows)
    place = {row["id"]: index for index, row in enumerate(rows)}
    centre = matrix[[place[message_id] for message_id in sources]].mean(axis=0)
    moved = query + tuning.excerpt_feedback_weight * centre
    norm = float(np.linalg.norm(moved))
    if norm == 0.0:
        return []
    likeness = matrix @ (moved / norm)
    order = sorted(range(len(rows)), key=lambda index: (-float(likeness[index]), index))
    return [rows[index]["id"] for index in order[: tuning.excerpt_vector_depth]]
