"""Full-text hits with long messages ranked by their best passage
(nodes/response/ranking/text_passages.py; on a real store:
tests/integration/test_search_passages.py)."""

from __future__ import annotations

import math
import re

import pytest

from nodes.response.ranking.passages import split_passages
from nodes.response.ranking.text_passages import passage_ranked
from stores.fulltext import BM25_B as B
from stores.fulltext import BM25_K1 as K1

WORD = re.compile(r"[^\W_]+")
FILLER = "The weather report covered " + ", ".join(["clouds and wind over a calm sea"] * 16) + "."
"""One sentence too long to share a passage with the answering one."""
QUESTION = "Which harbour did the ferry leave from?"
ANSWER = "The ferry left from the old harbour at dawn."


def long_answer(lead: int = 12, tail: int = 12) -> str:
    """An assistant's long answer: filler paragraphs around the one that answers."""
    return "\n".join([FILLER] * lead + [ANSWER] + [FILLER] * tail)


def bm25(text: str, units: list[str], stems: list[str]) -> float:
    """BM25 of `text` for `stems` over `units` (FTS5's formula, written out)."""
    documents = [WORD.findall(unit.lower()) for unit in units]
    mean = sum(len(d) for d in documents) / len(documents)
    words = WORD.findall(text.lower())
    norm = K1 * (1 - B + B * len(words) / mean)
    total = 0.0
    for stem in stems:
        held = sum(any(w.startswith(stem) for w in d) for d in documents)
        idf = max(math.log((len(documents) - held + 0.5) / (held + 0.5)), 1e-6)
        frequency = sum(w.startswith(stem) for w in words)
        total += idf * frequency * (K1 + 1) / (frequency + norm) if frequency else 0.0
    return total


def test_a_conversation_of_short_messages_ranks_as_the_store_ranks_it() -> None:
    texts = {1: "The ferry was late.", 2: ANSWER, 3: "Harbour fees went up.", 4: "A ferry."}
    hits = [(2, 5.0), (1, 2.0), (3, 1.5)]
    pool = [*hits, (4, 0.5)]
    assert passage_ranked(hits, pool, texts, QUESTION, 600, 3) == hits
    # No passages (size 0) or no content words: the store's hits as they are.
    long = {**texts, 1: long_answer()}
    assert passage_ranked(hits, pool, long, QUESTION, 0, 3) == hits
    assert passage_ranked(hits, pool, long, "What was it about?", 600, 3) == hits


def test_with_a_long_message_every_message_ranks_by_its_best_unit() -> None:
    answer = long_answer()
    texts = {1: "The ferry was late.", 2: answer, 3: "Harbour fees went up."}
    hits = [(1, 2.0), (3, 1.5)]
    pool = [*hits, (2, 1.2)]  # the long answer, past the store's best two
    ranked = passage_ranked(hits, pool, texts, QUESTION, 600, 2)
    # The statistics are the pool's units: each short message one, the answer's passages
    # each one. Its best passage holds both words; the short ones one each.
    units = [texts[1], *split_passages(answer, 600), texts[3]]
    best = max(bm25(unit, units, ["harbo", "ferry", "leave"]) for unit in units[1:-1])
    assert [i for i, _ in ranked] == [2, 1]
    assert ranked[0][1] == pytest.approx(best)
    assert ranked[1][1] == pytest.approx(bm25(texts[1], units, ["harbo", "ferry", "leave"]))


def test_the_page_is_the_pools_best_and_equal_scores_keep_the_stores_order() -> None:
    texts = {i: f"ferry number {i}" for i in range(1, 5)}
    texts[5] = long_answer(lead=0, tail=20)
    hits = [(2, 2.0), (1, 2.0), (3, 1.0)]
    pool = [*hits, (4, 1.0), (5, 0.5)]
    ranked = passage_ranked(hits, pool, texts, QUESTION, 600, 3)
    # The long answer's best passage holds both words and leads; the four short lines
    # score alike, so the store's order decides which two stay.
    assert [i for i, _ in ranked] == [5, 2, 1]
    assert ranked[1][1] == ranked[2][1] < ranked[0][1]
