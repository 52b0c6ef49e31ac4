"""Passages of long messages: how a message is split, the order its passages take and how
a message shown in part reads (the cut on a real store: tests/integration/test_excerpts.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from nodes.response.ranking.passages import (
    CUT,
    cut_text,
    long_messages,
    passage_order,
    split_passages,
)


@given(st.text(alphabet="ab .!\n", max_size=600), st.integers(min_value=1, max_value=80))
def test_passages_keep_every_word_in_order_within_the_limit(text: str, limit: int) -> None:
    passages = split_passages(text, limit)
    assert all(0 < len(passage) <= limit for passage in passages)
    assert "".join(" ".join(passages).split()) == "".join(text.split())


def test_lines_are_packed_and_a_long_line_is_cut_at_its_sentences() -> None:
    text = "Short one.\nShort two.\n" + "First sentence here. Second sentence here."
    assert split_passages(text, 25) == [
        "Short one. Short two.",
        "First sentence here.",
        "Second sentence here.",
    ]


def test_only_messages_over_the_long_size_that_split_have_passages() -> None:
    rows = {
        1: {"content": "short"},
        2: {"content": "A paragraph.\nAnother paragraph."},
        3: {"content": "x" * 12},
    }
    assert long_messages(rows, 10, 15) == {2: ["A paragraph.", "Another", "paragraph."]}
    assert long_messages(rows, 10, 0) == {}


def test_the_best_passage_takes_its_messages_place_and_the_rest_come_last() -> None:
    passages = {20: ["weather", "the tower opens at ten", "trams"]}
    relevance = {"weather": 0.1, "the tower opens at ten": 0.9, "trams": 0.5}
    order = passage_order(
        [(1, 10), (1, 20), (2, 30)], passages, lambda texts: [relevance[t] for t in texts]
    )
    assert order == [(1, 10, None), (1, 20, 1), (2, 30, None), (1, 20, 2), (1, 20, 0)]


def test_a_message_shown_in_part_is_marked_where_it_was_cut() -> None:
    parts = ["one", "two", "three", "four"]
    assert cut_text(parts, {1}) == f"{CUT} two {CUT}"
    assert cut_text(parts, {0, 2}) == f"one {CUT} three {CUT}"
    assert cut_text(parts, {0, 1, 2, 3}) == "one two three four"
