"""Figures for the benchmark tests, worked out by hand."""

from __future__ import annotations

import math


def tokens_by_hand(text: str) -> int:
    """`count_tokens_approximately` of one user message: (chars + len("user")) / 4, + 3."""
    return math.ceil((len(text) + len("user")) / 4) + 3
