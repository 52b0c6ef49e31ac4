"""The search's candidate topics ordered by their best message.

Reciprocal Rank Fusion ranks a topic by every vote it gets (`nodes.response.search`):
its own vectors and summary, and up to two of its messages from each list of message
hits (`nodes.response.fusion.topic_votes`). Under RRF's k = 60 a weak vote weighs
nearly as much as a strong one, so a long topic that matches a question loosely in many
places ranks beside, or above, a short one holding the answer.

The context's excerpts (`nodes.response.excerpts.rank_topic_messages`) judge each
message instead: its topic's fused rank, its own full-text and vector hits, the share a
hit lends the messages beside it (the answer after the matching question), its speaker,
the days the question names. A topic is then as relevant as its best message, the MaxP
rule of passage ranking (Dai and Callan, "Deeper Text Understanding for IR with
Contextual Neural Language Modeling", 2019): the fused candidates are ordered by the
score of their best message (`message_scores`), ties in fused order. The order
has no weight of its own: it is the excerpts' scores, with the run's weights, and a
candidate's `score` is its best message's.

One difference: no hit leads. The excerpts put the best full-text hits first whatever
their score, since under a small budget a few exact matches are worth more than the
context around them: a rule for filling a budget, not a judgement of relevance. In
"What did we talk about the day before yesterday?" a cooking line holding "before"
would lead, and put that day's topic before the one the date names.

With a model, it is the order in which the reranker reads the candidates; its measured
effect is in docs/evaluation.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.context import ResponseContext
from core.ports import Store
from nodes.response.excerpts import message_scores, ranking_weights, speaker_rules


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


def best_message_order(
    store: Store,
    context: ResponseContext,
    fused: Sequence[int],
    *,
    hit_lists: Sequence[Sequence[int]],
    vector_lists: Sequence[Sequence[int]],
    dated: Sequence[int],
    queries: Sequence[str],
) -> list[tuple[int, float]]:
    """The user's `fused` topics (best first by fused score) ordered by their best
    message, each with that message's score.

    `hit_lists` are the full-text message hits, `vector_lists` the vector ones (a passage
    hit given as the message that carried its document, as in the fusion), `dated` the
    messages written when the question says, `queries` the turn's (whose speakers the
    question names). Reads the topics' members in one statement; an id that is not one
    of the user's topics has no messages and comes last."""
    rows = store.messages.members_of(context.user_id, fused)
    found = {member.id: member for topic_rows in rows.values() for member in topic_rows}
    members = [(topic_id, [member.id for member in rows[topic_id]]) for topic_id in fused]
    weights = {**ranking_weights(context)}
    weights.pop("lead", None)  # no hit leads: `message_scores` takes none
    score, _ = message_scores(
        members,
        hit_lists,
        context.tuning.rrf_k,
        vector_lists=vector_lists,
        dated=dated,
        **speaker_rules(context, queries, list(found.values())),
        **weights,
    )
    return by_best_message(members, score)
