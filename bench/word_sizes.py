"""The word-share floor by memory size: how much of a question's wording memory holds.

In a small memory a question memory answers finds fewer of its words than in a large one
(a short stretch of conversation uses fewer words), so a share floor taken on memories of
hundreds of messages would turn away real questions in small ones. As for the vector
floors (`bench.floor_sizes`), each memory is cut into windows of 2 to 256 consecutive
messages, here centred on each answerable question's first evidence message, and for
each size the `WORD_SHARE_QUANTILE` point of the questions' word shares in their window
is taken; fitted as `base + per_log · ln n`, lowered until no size's point lies under
it (the floor turns away no more at any size than it was calibrated to), and capped by
the floor of the full memories (`nodes.response.ranking.floors.SizeCurve`). A word is found
as the full-text index finds it: a word of the text that starts with the question
word's first letters (`stores.fulltext.query_stems`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.corpus import Corpus
from bench.floor_sizes import SIZES
from bench.locomo import Question
from bench.metrics import percentile
from nodes.response.ranking.floors import WORD_SHARE_QUANTILE, SizeCurve
from stores.fulltext import query_stems

WORD = re.compile(r"[^\W_]+", re.UNICODE)
"""A word as the full-text index cuts it (`stores.fulltext.user_words`)."""


@dataclass
class MemoryWords:
    """One memory's messages (their words, in order) and its answerable questions."""

    messages: list[set[str]]
    questions: list[list[str]]
    """Each question's stems (`query_stems`); a question without any is left out."""
    evidence: list[int]
    """Per question, the position of its first evidence message."""

    @classmethod
    def of(cls, contents: Sequence[str], asked: Sequence[tuple[str, int]]) -> MemoryWords:
        kept = [(query_stems(text), position) for text, position in asked]
        kept = [(stems, position) for stems, position in kept if stems]
        return cls(
            [set(WORD.findall(content.lower())) for content in contents],
            [stems for stems, _ in kept],
            [position for _, position in kept],
        )

    def share(self, stems: Sequence[str], start: int, end: int) -> float:
        """The share of `stems` some message in [start, end) holds a word of."""
        words = set().union(*self.messages[start:end])
        found = sum(any(word.startswith(stem) for word in words) for stem in stems)
        return found / len(stems)

    def window(self, position: int, size: int) -> tuple[int, int]:
        """`size` consecutive messages around `position`, inside the memory."""
        start = min(max(0, position - size // 2), max(0, len(self.messages) - size))
        return start, min(len(self.messages), start + size)


def word_curve(memories: Sequence[MemoryWords]) -> SizeCurve:
    """The word-share floor of these memories' answerable questions by memory size."""
    quantile = WORD_SHARE_QUANTILE * 100
    by_size: defaultdict[int, list[float]] = defaultdict(list)
    whole = []
    for memory in memories:
        for stems, position in zip(memory.questions, memory.evidence, strict=True):
            for size in SIZES:
                by_size[size].append(memory.share(stems, *memory.window(position, size)))
            whole.append(memory.share(stems, 0, len(memory.messages)))
    logs = [float(np.log(size)) for size in SIZES]
    floors = [percentile(by_size[size], quantile) or 0.0 for size in SIZES]
    slope, _ = np.polyfit(logs, floors, 1)
    base = min(floor - slope * log for floor, log in zip(floors, logs, strict=True))
    return SizeCurve(float(base), float(slope), percentile(whole, quantile) or 0.0)


def first_evidence(corpus: Corpus, question: Question) -> int:
    """The position in the conversation of the question's first evidence message."""
    return min(corpus.position[e] for e in question.evidence if e in corpus.position)


def memory_words(corpus: Corpus, asked: Sequence[Question]) -> MemoryWords:
    """The conversation's words in order and the `asked` questions with their evidence."""
    content = {
        message["external_id"]: message["content"] for message in corpus.conversation.messages
    }
    return MemoryWords.of(
        [content.get(external, "") for external in corpus.order],
        [(question.question, first_evidence(corpus, question)) for question in asked],
    )
