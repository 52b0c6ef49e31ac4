"""Figures for the benchmark tests, worked out by hand."""

from __future__ import annotations

import math
from collections.abc import Sequence

from bench.baselines import MessageLevel, Retrieval
from bench.corpus import Corpus
from bench.metrics import Unit


def tokens_by_hand(text: str) -> int:
    """`count_tokens_approximately` of one user message: (chars + len("user")) / 4, + 3."""
    return math.ceil((len(text) + len("user")) / 4) + 3


class FixedOrder(MessageLevel):
    """Every question gets the same ranking: the given messages, one per unit."""

    name = "fixed"

    def __init__(self, order: Sequence[str]) -> None:
        self.order = list(order)

    async def retrieve(self, corpus: Corpus, question: str) -> Retrieval:
        return Retrieval([Unit(i, (i,)) for i in self.order])
