"""Questions about the user's own past, told apart from requests and from questions
about others (`nodes.response.ranking.past`), in English and Russian; what the ranking
does with them: tests/unit/test_likeliest_rule.py, test_prompts_and_names.py."""

from __future__ import annotations

from nodes.response.ranking.past import asks_how_many_i, asks_whether_i
from nodes.response.ranking.summary import asks_for_mentions

WHETHER = (
    "Have I ever met Bryan and received storytelling advice from him?",
    "Did I finish the first draft?",
    "Do I usually feel anxious after feedback?",
    "Встречался ли я с Брайаном?",
    "Получал ли я ключ API для этого проекта?",
)
HOW_MANY = (
    "How many classification problems have I completed, and what accuracy rate have I kept?",
    "How much did I increase my weekly word count goal?",
    "How many times had I mentioned the deadline?",
    "Сколько задач на площадь я решил?",
    "Сколько раз я встречалась с научным руководителем?",
)
NEITHER = (
    "How can I find the area of a triangle using medians?",
    "How many days are there between the session I missed and the deadline?",
    "How much progress have we made on the edits so far?",
    "How many commits have been merged into the main branch?",
    "What is my accuracy percentage on area problems?",
    "Сколько стоит курс, если я куплю его сегодня?",
    "Сколько задач решила Анна?",
    "Can you summarize how my work with Robert developed?",
)


def test_a_yes_no_question_about_the_users_past_is_told() -> None:
    for question in WHETHER:
        assert asks_whether_i([question]), question
        assert not asks_how_many_i([question]), question
        assert asks_for_mentions([question]), question


def test_a_count_of_what_the_user_did_is_told() -> None:
    for question in HOW_MANY:
        assert asks_how_many_i([question]), question
        assert not asks_whether_i([question]), question
        # A count adds up the mentions of what was done, not of whom it names.
        assert not asks_for_mentions([question]), question


def test_requests_and_questions_about_others_are_neither() -> None:
    for question in NEITHER:
        assert not asks_whether_i([question]), question
        assert not asks_how_many_i([question]), question
    # Any one of a turn's queries (the raw message, the enriched one) tells it.
    assert asks_how_many_i([NEITHER[0], HOW_MANY[0]])
    assert asks_whether_i([NEITHER[0], WHETHER[0]])
    # A summary request asks for every mention too, though it is neither.
    assert asks_for_mentions([NEITHER[-1]])
