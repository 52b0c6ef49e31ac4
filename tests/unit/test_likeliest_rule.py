"""The user's standing instruction most like the question leads even when the turn's hits
do not reach it (`nodes.response.ranking.recall.likeliest_rule`). The likeness here is a
table of cosines; the real embedder's: tests/integration/test_excerpts.py."""

from __future__ import annotations

from collections.abc import Sequence

from nodes.response.ranking.passages import PassageScores
from nodes.response.ranking.recall import Recall, likeliest_rule, rank_members
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row

TEXTS = [
    ("user", "I'm working on the area of my triangle with sides 13, 14 and 15."),
    ("assistant", "Always check the units first."),  # the assistant's: no instruction
    ("user", "Always compare several methods when I ask about triangle area calculations."),
    ("user", "Always format dates as Month Day, Year when I ask about deadlines."),
    ("user", "Heron's formula gave me 84 square centimetres."),
    ("user", "Always use APA style when I ask about references."),
]
ROWS = [
    message_row(position + 1, position, text, ts=60.0 * (position + 1), role=role)
    for position, (role, text) in enumerate(TEXTS)
]
TRIANGLE, DATES, APA = 3, 4, 6


def likeness(table: dict[int, float]) -> PassageScores:
    """A `PassageScores` that reads each text's cosine from `table` (by message id)."""
    by_text = {row["content"]: table.get(row["id"], 0.0) for row in ROWS}

    def scores(texts: Sequence[str]) -> list[float]:
        return [by_text[text] for text in texts]

    return scores


def test_the_instruction_most_like_the_question_is_chosen_over_the_floor_only() -> None:
    scores = likeness({TRIANGLE: 0.48, DATES: 0.05, APA: 0.1, 2: 0.9})
    assert likeliest_rule(ROWS, scores, 0.38) == {TRIANGLE}
    # One only, however many reach the floor: the likeliest.
    assert likeliest_rule(ROWS, likeness({TRIANGLE: 0.5, DATES: 0.6}), 0.38) == {DATES}
    # Under the floor none; without a scorer none; with no instruction none.
    assert likeliest_rule(ROWS, scores, 0.5) == frozenset()
    assert likeliest_rule(ROWS, None, 0.38) == frozenset()
    assert likeliest_rule(ROWS[:2] + ROWS[4:5], scores, 0.0) == frozenset()


def test_it_leads_where_the_hits_do_not_reach_it() -> None:
    question = "How can I find the area of a triangle using medians?"
    hits = [[1, 5, 2]]  # the subject's messages; no instruction among them
    floor = Ranking().tuning.message_vector_floor

    def order(table: dict[int, float] | None) -> list[int]:
        scores = likeness(table) if table is not None else None
        recall = Recall([question], text_hits=hits, scores=scores)
        return [m for _, m in rank_members([(1, ROWS)], recall, Ranking())]

    led = order({TRIANGLE: floor + 0.1, DATES: 0.05})
    assert led[0] == TRIANGLE
    plain = order(None)
    assert plain[0] != TRIANGLE and TRIANGLE in plain
    assert led[1:] == [m for m in plain if m != TRIANGLE]
    # Like the question but under the floor: the order the hits make.
    assert order({TRIANGLE: floor - 0.01}) == plain


def test_no_instruction_leads_a_question_about_the_users_past() -> None:
    hits = [[1, 5, APA, 2]]  # an instruction among the hits, and one like the question
    floor = Ranking().tuning.message_vector_floor
    scores = likeness({TRIANGLE: floor + 0.1, DATES: 0.05})

    def order(question: str) -> list[int]:
        recall = Recall([question], text_hits=hits, scores=scores)
        return [m for _, m in rank_members([(1, ROWS)], recall, Ranking())]

    asked = order("How can I find the area of a triangle using medians?")
    assert asked[:2] in ([TRIANGLE, APA], [APA, TRIANGLE])
    for question in (
        "Have I ever worked on the area of a triangle with medians?",
        "Did I use a formula for my triangle's area?",  # no name: `naming_first` keeps it
        "Находил ли я площадь треугольника через медианы?",
        "How many triangle area problems have I completed?",
        "How much did I improve my accuracy on triangle areas?",
        "Сколько задач на площадь треугольника я решил?",
    ):
        whether = order(question)
        # The hits' order: the instruction the hits reach keeps its place among them,
        # the one like the question comes after them; neither is moved to the front.
        assert whether[:3] == [1, 5, APA], question
        assert sorted(whether) == sorted(asked), question
