"""Two ranking rules for what a question asks of the conversation: a question about what
the assistant said gets each answer with the user's message it answered
(`nodes.response.ranking.speakers.with_prompts`), and a summary request naming someone
gets the user's messages naming them first (`nodes.response.ranking.summary`). On a real
store with the real search and embedder: tests/integration/test_answers_and_summaries.py."""

from __future__ import annotations

from core.records import Member
from nodes.response.ranking.messages import replies_after
from nodes.response.ranking.recall import Recall, rank_members
from nodes.response.ranking.speakers import with_prompts
from nodes.response.ranking.summary import (
    asks_for_summary,
    named_in,
    naming_first,
)
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row

TEXTS = [
    "I have a scholarship deadline on May 15 and a visa appointment on May 20.",
    "Plan backwards from May 15: drafts by May 1, documents by May 10, then the visa.",
    "Robert, my mentor, told me to submit my essay to a journal.",
    "A journal submission is a good next step; check its word limit first.",
    "Always format dates as Month Day, Year when I ask about deadlines.",
    "Noted, dates will be written as Month Day, Year.",
    "I met Robert again on June 1 and he liked my rebuttals.",
    "That is encouraging; keep the rebuttals short and specific.",
    "The weather was grey all week and I stayed home.",
    "Grey weeks are good for writing. Robert would agree.",
]
ROWS = [message_row(i + 1, i, text, ts=60.0 * (i + 1)) for i, text in enumerate(TEXTS)]
BY_ID = {row["id"]: row for row in ROWS}
ROLES = {row["id"]: row["role"] for row in ROWS}
REPLIES = replies_after([Member.of(row) for row in ROWS])


def test_a_summary_request_is_told_in_english_and_russian() -> None:
    for asked in (
        "Can you give me a summary of my work with Robert?",
        "Summarize how my essay developed.",
        "Could you summarise the plan?",
        "Подведи итоги моей работы с Робертом",
        "Резюмируй, что я решил про эссе",
        "Сделай сводку по проекту",
        "Подытожь наши встречи",
    ):
        assert asks_for_summary([asked]), asked
    for other in ("Help me improve my резюме", "Помоги с резюме", "What did Robert say?"):
        assert not asks_for_summary([other]), other


def test_the_messages_naming_someone_are_the_users_and_name_them_as_a_name() -> None:
    question = "Can you give me a summary of how my work with Robert has developed?"
    # The user's messages naming Robert; the assistant's last one names him too: not it.
    assert named_in([question], BY_ID) == {3, 7}
    # "Can" is the question's first word and "The" is not written as a name: no one.
    assert named_in(["Can you summarize The weather?"], BY_ID) == frozenset()
    assert named_in(["Подведи итоги работы с Робертом"], BY_ID) == frozenset()  # no such name
    russian = {1: message_row(1, 0, "Роберт посоветовал журнал.", ts=1.0)}
    assert named_in(["Подведи итоги работы с Робертом"], russian) == {1}


def test_a_summary_naming_someone_puts_their_messages_after_those_that_lead() -> None:
    ranked = [(1, 5), (1, 9), (1, 1), (1, 7), (1, 2), (1, 3), (1, 10), (1, 4)]
    question = "Can you give me a summary of my work with Robert?"
    assert naming_first(ranked, ROWS, [question], leading={5}) == [
        (1, 5),
        (1, 7),
        (1, 3),
        (1, 9),
        (1, 1),
        (1, 2),
        (1, 10),
        (1, 4),
    ]
    # A yes/no question about the user's past with them is answered by every mention of
    # them too.
    named = [(1, 5), (1, 7), (1, 3), (1, 9), (1, 1), (1, 2), (1, 10), (1, 4)]
    assert naming_first(ranked, ROWS, ["Have I ever met Robert?"], leading={5}) == named
    # Not such a question, or one naming no one: the order as it was.
    assert naming_first(ranked, ROWS, ["What did Robert say?"], {5}) == ranked
    assert naming_first(ranked, ROWS, ["How many times did I meet Robert?"], {5}) == ranked
    assert naming_first(ranked, ROWS, ["Have I ever missed a deadline?"], {5}) == ranked
    assert naming_first(ranked, ROWS, ["Summarize my essay work."], {5}) == ranked


def test_each_answer_comes_after_the_message_it_answered() -> None:
    ranked = [(1, 4), (2, 2), (1, 9), (2, 1), (1, 3)]
    assert with_prompts(ranked, REPLIES, ROLES) == [
        (1, 3),  # the prompt of 4, from further down
        (1, 4),
        (2, 1),  # the prompt of 2, in its own topic
        (2, 2),
        (1, 9),  # a user message: nothing before it
    ]
    # A prompt already shown earlier stays where it is; a user's message after a user's
    # message is no answer.
    assert with_prompts([(1, 3), (1, 9), (1, 4)], REPLIES, ROLES) == [(1, 3), (1, 9), (1, 4)]
    two_users = {**ROLES, 4: "user"}
    plain = [(1, 4), (1, 3)]
    assert with_prompts(plain, replies_after([Member.of(r) for r in ROWS]), two_users) == plain


def test_in_the_ranking_only_a_question_about_what_the_assistant_said_pairs_them() -> None:
    hits = [[2, 8, 6]]

    def order(question: str) -> list[int]:
        recall = Recall([question], text_hits=hits)
        return [m for _, m in rank_members([(1, ROWS)], recall, Ranking())]

    asked = order("How did you recommend planning my deadlines?")
    assert asked.index(1) == asked.index(2) - 1
    plain = order("How should I plan my deadlines?")
    assert plain.index(1) != plain.index(2) - 1
    assert sorted(asked) == sorted(plain) == list(range(1, 11))
