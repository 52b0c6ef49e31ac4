"""Pseudo-relevance feedback (`nodes.response.ranking.feedback`): the query's vector moved
toward the first ranked messages finds a reply that shares neither words nor meaning
with the question, and the ranking takes it as one more vector list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from core.records import MessageRow
from core.tuning import packaged_tuning
from nodes.response.ranking.feedback import feedback_order, feedback_sources, wants_feedback
from nodes.response.ranking.recall import Recall, rank_items, with_feedback
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row


def row(message_id: int, content: str, role: str = "user", topic_id: int = 1) -> MessageRow:
    return message_row(
        message_id,
        message_id,
        content,
        1772442000.0 + 60 * message_id,
        role=role,
        topic_id=topic_id,
    )


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


QUESTION = "What genre is Joanna's first screenplay?"
# Axis 0: the question's own words ("first", "genre"); axis 1: the screenplay she wrote;
# axis 2: small talk.
VECTORS = {
    1: unit(0.5, 0.85, 0.0),  # "I finished my first full screenplay": the full-text hit
    2: unit(0.0, 0.3, 1.0),  # "What's it about?"
    3: unit(0.0, 1.0, 0.0),  # "A mix of drama and romance": the answer, nothing like the question
    **{i: unit(0.3, 0.0, 0.95) for i in range(10, 16)},  # small talk, nearer the question
}
SCREENPLAY = [
    row(1, "Woo! I finally finished my first full screenplay and printed it last Friday."),
    row(2, "Wow, that sounds awesome! What's it about?"),
    row(3, "Thanks! It's a mix of drama and romance!"),
]
CHAT = [
    row(i, f"Small talk number {i} about the first warm day.", topic_id=i) for i in range(10, 16)
]
MEMBERS = [*((r["topic_id"], [r]) for r in CHAT), (1, SCREENPLAY)]
QUERY = unit(1.0, 0.0, 0.0)


def vectors(rows: Sequence[MessageRow]) -> np.ndarray:
    return np.stack([VECTORS[r["id"]] for r in rows])


RECALL = Recall(
    queries=[QUESTION],
    text_hits=[[1]],
    vector_hits=[[10, 11, 12, 13, 14, 15, 1]],  # the answer is in no list
    query=QUERY,
    vectors=vectors,
)


ON = replace(packaged_tuning(), excerpt_feedback_messages=2, excerpt_feedback_weight=1.0)
"""The profile's feedback (two messages at the query's weight), whatever it ships with."""


def order(recall: Recall, ranking: Ranking | None = None) -> list[int]:
    items, _ = rank_items(MEMBERS, recall, ranking or Ranking(ON))
    return [message_id for _, message_id, _ in items]


def test_the_sources_are_the_first_messages_shown_whole_that_do_not_lead_by_rule() -> None:
    tuning = replace(packaged_tuning(), excerpt_feedback_messages=2, excerpt_passage_chars=80)
    rows = {
        1: row(1, "Always answer me in French."),
        2: row(2, "x" * 81),
        3: row(3, "The tram stops at the tower."),
        4: row(4, "It opens at ten."),
        5: row(5, "And closes at six."),
    }
    assert feedback_sources([1, 2, 3, 4, 5], rows, {1}, tuning) == [3, 4]
    assert feedback_sources([5, 4], rows, set(), replace(tuning, excerpt_feedback_messages=0)) == []


def test_the_moved_query_finds_the_reply_the_question_is_far_from() -> None:
    tuning = ON
    rows = [*SCREENPLAY, *CHAT]
    moved = feedback_order(QUERY, rows, [1], vectors, tuning)
    assert moved[:2] == [1, 3], moved
    # The query alone ranks the small talk first and the answer last.
    alone = feedback_order(QUERY, rows, [1], vectors, replace(tuning, excerpt_feedback_weight=0.0))
    assert alone[0] == 1 and alone.index(3) > max(alone.index(i) for i in range(10, 16))
    assert feedback_order(QUERY, rows, [], vectors, tuning) == []
    assert (
        len(feedback_order(QUERY, rows, [1], vectors, replace(tuning, excerpt_vector_depth=4))) == 4
    )


def test_the_ranking_takes_the_feedback_list_and_the_answer_moves_up() -> None:
    with_it = order(RECALL)
    without = order(replace(RECALL, vectors=None))
    assert with_it[:3] == [1, 2, 3], with_it
    assert without[-1] == 3, without
    # Off, or without the vectors, the order is the one without feedback.
    off = Ranking(replace(ON, excerpt_feedback_messages=0))
    assert order(RECALL, off) == without
    rows = {r["id"]: r for _, messages in MEMBERS for r in messages}
    first = replace(ON, excerpt_feedback_messages=1)
    fed = with_feedback(rows, RECALL, first, [1, 10, 2, 3])
    assert fed is not None and fed.vector_hits[:-1] == RECALL.vector_hits
    assert fed.vector_hits[-1][:2] == [1, 3]
    assert with_feedback(rows, replace(RECALL, query=None), first, [1, 10, 2, 3]) is None


def test_standing_instructions_and_long_messages_give_no_feedback() -> None:
    rule = row(1, "Always answer me in French when I ask about screenplays.")
    members = [(1, [rule, *SCREENPLAY[1:]]), (2, CHAT)]
    rows = {r["id"]: r for _, messages in members for r in messages}
    tuning = replace(ON, excerpt_feedback_messages=1)
    fed = with_feedback(rows, RECALL, tuning, [1, 10, 2, 3])
    assert fed is not None
    assert fed.vector_hits[-1] == feedback_order(QUERY, list(rows.values()), [10], vectors, tuning)
    long = {**rows, 10: row(10, "y" * (tuning.excerpt_passage_chars + 1), topic_id=2)}
    fed = with_feedback(long, RECALL, tuning, [1, 10, 3, 2])
    assert fed is not None
    assert fed.vector_hits[-1] == feedback_order(QUERY, list(long.values()), [3], vectors, tuning)
    assert fed.vector_hits[-1][:2] == [1, 3]


def test_no_feedback_for_a_request_for_advice_or_a_yes_no_question_about_the_users_past() -> None:
    rows = {r["id"]: r for _, messages in MEMBERS for r in messages}
    for question in (
        "What genre is Joanna's first screenplay?",
        "When did I get my API key?",
        "Какой жанр у первого сценария Джоанны?",
    ):
        assert wants_feedback([question]), question
        assert with_feedback(rows, replace(RECALL, queries=[question]), ON, [1, 2]) is not None
    for question in (
        "How should I organize my resume?",
        "What would you suggest for the security of my app?",
        "Have I ever obtained an API key for this project?",
        "Did I finish the first draft?",
        "Do I usually feel anxious after feedback?",
        "Посоветуй, как мне подготовиться к собеседованию?",
        "Получал ли я ключ API для этого проекта?",
    ):
        assert not wants_feedback([question]), question
        assert with_feedback(rows, replace(RECALL, queries=[question]), ON, [1, 2]) is None
