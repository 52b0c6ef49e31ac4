"""The search's candidates by their best message
(`nodes.response.ranking.recall.order_topics`), worked out by hand
(on a real store: tests/integration/test_topic_order.py)."""

from __future__ import annotations

from pytest import approx

from nodes.response.ranking.messages import by_best_message, message_scores


def test_a_topic_is_as_relevant_as_its_best_message() -> None:
    # k=1, no neighbour shares. Priors: topic 10 (rank 1) 1/2 for 1, 2, 3; topic 20
    # (rank 2) 1/3 for 4. Hit 4 at rank 1 votes 1/2: 4 scores 1/3 + 1/2 = 5/6. Hits 1 and
    # 2 at ranks 2 and 3 vote 1/3 and 1/4: 1 scores 1/2 + 1/3 = 5/6, 2 scores 3/4.
    members = [(10, [1, 2, 3]), (20, [4])]
    score, place = message_scores(members, [[4, 1, 2]], 1, neighbour_reach=0)
    assert score == approx({1: 5 / 6, 2: 3 / 4, 3: 1 / 2, 4: 5 / 6})
    assert place == {1: (0, 0), 2: (0, 1), 3: (0, 2), 4: (1, 0)}
    # A tie keeps the fused order: topic 10 first.
    ranked = by_best_message(members, score)
    assert [topic_id for topic_id, _ in ranked] == [10, 20]
    assert [best for _, best in ranked] == approx([5 / 6, 5 / 6])
    # One more hit on 4 (a second list) puts its topic first, with the higher score.
    score, _ = message_scores(members, [[4, 1, 2], [4]], 1, neighbour_reach=0)
    ranked = by_best_message(members, score)
    assert [topic_id for topic_id, _ in ranked] == [20, 10]
    assert [best for _, best in ranked] == approx([4 / 3, 5 / 6])


def test_a_topic_without_scored_messages_comes_last_at_zero() -> None:
    # Topic 30 is not the user's (no members read): it keeps its place after the others.
    members = [(30, []), (10, [1]), (20, [2])]
    score, _ = message_scores(members, [[2]], 60)
    ranked = by_best_message(members, score)
    assert [topic_id for topic_id, _ in ranked] == [20, 10, 30]
    assert ranked[-1][1] == 0.0
    assert ranked[0][1] > ranked[1][1] > 0.0
