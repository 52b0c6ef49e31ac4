"""A question about what the user brought up over the conversation gets a digest of the
user's own messages (`nodes.response.ranking.recap`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodes.response.ranking.passages import passage_order
from nodes.response.ranking.recall import Recall, rank_items
from nodes.response.ranking.recap import asks_for_recap
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row


@pytest.mark.parametrize(
    "question",
    [
        "Can you list the order in which I brought up different aspects of my tracker?",
        "In what order did I ask about the API and the database?",
        "How many new columns did I want to add to the transactions table?",
        "How many times did I mention my cover letter?",
        "What features did I plan across my weather app conversations?",
        "What did I worry about throughout our sessions?",
        "В каком порядке я спрашивал про трекер?",
        "Сколько раз я упоминал кота?",
        "Что я говорил во всех наших разговорах про сон?",
        "Как менялись мои планы на протяжении наших бесед?",
    ],
)
def test_a_question_about_what_the_user_brought_up_over_time_asks_for_a_recap(
    question: str,
) -> None:
    assert asks_for_recap([question])


@pytest.mark.parametrize(
    "question",
    [
        "How many days passed between when I obtained my API key and the deadline?",
        "How many cats do I have?",
        "What did I say about sleep?",
        "What did you recommend for the rate limit?",
        "Сколько у меня кошек?",
        "Что ты советовал про сон?",
    ],
)
def test_a_question_about_one_fact_is_no_recap(question: str) -> None:
    assert not asks_for_recap([question])


RELEVANCE = {"advice": 0.2, "the answer's best part": 0.8}
IN_PLACE = [(1, 10, None), (1, 20, 0), (2, 30, None)]
"""The order's head: message 10 whole, the digest's opening of 20, 30 whole."""


def test_a_digests_opening_takes_its_place_and_its_rest_comes_before_the_closing_answers() -> None:
    passages = {
        20: ["I'm adding a column.", "code", "more code"],
        90: ["advice", "the answer's best part"],
    }
    asked: list[str] = []

    def scores(texts: list[str]) -> list[float]:
        asked.extend(texts)
        return [RELEVANCE[t] for t in texts]

    order = passage_order([(1, 10), (1, 20), (2, 30), (2, 90)], passages, scores, openings={20})
    assert order == [*IN_PLACE, (1, 20, 1), (1, 20, 2), (2, 90, 1), (2, 90, 0)]
    assert asked == ["advice", "the answer's best part"]  # a digest's passages cost no encoding


def test_the_digests_rest_comes_before_the_closing_answers_shown_whole_too() -> None:
    # 95 is a closing answer too short for passages: it closes the order whole, and the
    # digest's other passages still come before every closing answer.
    passages = {20: ["I'm adding a column.", "code"], 90: ["advice", "the answer's best part"]}
    ranked = [(1, 10), (1, 20), (2, 30), (2, 90), (2, 95)]
    order = passage_order(
        ranked, passages, lambda texts: [RELEVANCE[t] for t in texts], {20}, closing={90, 95}
    )
    assert order == [*IN_PLACE, (1, 20, 1), (2, 90, 1), (2, 95, None), (2, 90, 0)]


ROWS = [
    message_row(position + 1, position, content, ts=60.0 * (position + 1))
    for position, content in enumerate(
        [
            "I'm starting a budget tracker in Flask. " + "x = 1\n" * 60,
            "Sure, here is a plan.",
            "Now I want to add a notes column.",
            "Add it with ALTER TABLE.",
        ]
    )
]  # roles alternate from the user's


def ranked(question: str, ranking: Ranking) -> list[tuple[int, int | None]]:
    recall = Recall(
        queries=[question],
        text_hits=[[2, 4, 1, 3]],
        scores=lambda texts: [0.5] * len(texts),
    )
    items, _ = rank_items([(1, ROWS)], recall, ranking)
    return [(message_id, index) for _, message_id, index in items]


def test_a_recap_shows_the_users_messages_first_each_by_its_opening() -> None:
    order = ranked("In what order did I bring up the parts of my tracker?", Ranking())
    assert order[:2] == [(1, 0), (3, None)]
    assert {message_id for message_id, _ in order[2:4]} == {2, 4}
    assert (1, 1) in order[4:]


def test_any_other_question_and_a_profile_without_recaps_rank_as_before() -> None:
    plain = ranked("What did the assistant plan for my tracker?", Ranking())
    assert plain[0] == (2, None)
    assert all(index is None for _, index in plain)
    off = Ranking(replace(Ranking().tuning, excerpt_recap_chars=0))
    assert ranked("In what order did I bring up the parts of my tracker?", off) == plain
