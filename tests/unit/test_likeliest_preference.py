"""A request for advice: the user's stated preference most like it leads even when it is
told in passing in a longer message the turn's hits do not reach
(`nodes.response.ranking.recall.advice_preferences`). The likeness here is a table of
cosines; the real embedder's: tests/integration/test_excerpts.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from nodes.response.ranking.passages import PassageScores
from nodes.response.ranking.recall import Recall, advice_preferences, rank_members
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row

LIGHT = (
    "I'm trying to keep my app lightweight and easy to maintain, so I prefer simple, minimal "
    "dependencies. How can I keep the Flask app small while I add the features? "
    + "It has login, expenses and a dashboard so far. "
    * 8
)
TEXTS = [
    ("user", "I'm adding login and expense tracking to my Flask app this week."),
    ("assistant", "Good plan: start with the models."),
    ("user", LIGHT),
    ("user", "I prefer dark mode on the dashboard."),
    ("user", "The expenses table has amount, date and category."),
    ("user", "I prefer tabs, and " + "here is my whole settings file. " * 40),
]
ROWS = [
    message_row(position + 1, position, text, ts=60.0 * (position + 1), role=role)
    for position, (role, text) in enumerate(TEXTS)
]
LIGHT_ID, DARK, TABS = 3, 4, 6
REQUEST = "What libraries would you suggest I use for login and analytics?"
HITS = [[1, 5, 2]]  # the subject's messages; no preference among them


def likeness(table: dict[int, float]) -> PassageScores:
    """A `PassageScores` that reads each text's cosine from `table` (by message id)."""
    by_text = {row["content"]: table.get(row["id"], 0.0) for row in ROWS}

    def scores(texts: Sequence[str]) -> list[float]:
        return [by_text.get(text, 0.0) for text in texts]

    return scores


def test_the_preference_most_like_the_request_is_chosen_over_the_floor_only() -> None:
    tuning = Ranking().tuning
    floor = tuning.message_vector_floor
    near = frozenset({1, 5, 2})
    chosen = advice_preferences(ROWS, near, likeness({LIGHT_ID: floor + 0.2, DARK: 0.1}), tuning)
    assert len(LIGHT) > tuning.excerpt_preference_chars  # too long to lead as a hit alone
    assert chosen == {LIGHT_ID}
    # One only: the likeliest. Under the floor, or without a scorer, none.
    table = {LIGHT_ID: floor + 0.1, DARK: floor + 0.2}
    assert advice_preferences(ROWS, near, likeness(table), tuning) == {DARK}
    assert advice_preferences(ROWS, near, likeness({LIGHT_ID: floor - 0.01}), tuning) == set()
    assert advice_preferences(ROWS, near, None, tuning) == set()
    # A message cut into passages (over excerpt_long_answer_chars) is never one.
    assert len(TEXTS[TABS - 1][1]) > tuning.excerpt_long_answer_chars
    assert advice_preferences(ROWS, near, likeness({TABS: 0.9}), tuning) == set()
    # The short preferences the hits reach still lead beside it; off, none do.
    both = advice_preferences(ROWS, near | {DARK}, likeness({LIGHT_ID: floor + 0.2}), tuning)
    assert both == {LIGHT_ID, DARK}
    off = replace(tuning, excerpt_preference_chars=0)
    assert advice_preferences(ROWS, near | {DARK}, likeness({LIGHT_ID: 0.9}), off) == set()


def test_it_leads_a_request_for_advice_only() -> None:
    floor = Ranking().tuning.message_vector_floor

    def order(question: str, table: dict[int, float] | None) -> list[int]:
        scores = likeness(table) if table is not None else None
        recall = Recall([question], text_hits=HITS, scores=scores)
        return [m for _, m in rank_members([(1, ROWS)], recall, Ranking())]

    led = order(REQUEST, {LIGHT_ID: floor + 0.2})
    plain = order(REQUEST, None)
    assert led[0] == LIGHT_ID and plain[0] != LIGHT_ID
    assert led[1:] == [m for m in plain if m != LIGHT_ID]
    # A question about what was gets no preference first, however like it the message is.
    asked = "Which libraries did I add for login?"
    assert order(asked, {LIGHT_ID: floor + 0.2}) == order(asked, None)
    assert order(asked, None)[0] != LIGHT_ID
