"""The relevance floor: whether memory holds anything on a turn at all.

Each retrieval signal of the topic search has a floor: message vectors and topic vectors
(cosine), BM25 over messages and over topic summaries (FTS5's bm25, negated). A turn is
about memory when the best hit of at least one signal reaches that signal's floor; when
none does, the search returns no candidates, so the reranker is not called
(`no_candidates`) and the answer says that memory has nothing on this. Below the floor,
the nearest records are only the least unrelated ones ("What is the capital of France?"
against a diary quoted five topics at cosines down to 0.04).

The floors are calibrated on data, not guessed: `topica eval floor` puts a benchmark's
questions and sets of questions no memory answers (general-knowledge and everyday ones,
tests/data/unrelated_questions.json and everyday_questions.json) to its ingested
conversations and takes, for each signal, the score that the best hit
of an unrelated question reaches only `NULL_QUANTILE` of the time: a floor an unrelated
question clears by chance 5% of the time, per signal. The figures it printed, and their
leave-one-conversation-out check, are in `RelevanceFloors`' docstring. It is a gate, not a
filter: once memory is relevant, every hit votes as before, so recall can only change on
the questions the gate turns away.

The vector floors depend on the memory's size (`SizeCurve`): calibrated on memories of
hundreds of messages, a fixed floor turned away real questions in small ones. The
full-text floors stay fixed: in a small memory BM25's idf is small, so they rarely open
the gate there, which errs towards "nothing".

Scores alone let everyday questions through in a small memory, where the floors by size
are low ("How do I boil an egg?" reaches a message cosine over the floor of a memory of
two hundred messages): so a turn over a floor must also share at least
`word_share_floor` of its content words with the archived conversation
(`nodes.response.gate.word_share`), a share `topica eval floor` calibrates as the
`WORD_SHARE_QUANTILE` point of the answerable questions' shares (their lowest), lower in
a smaller memory (`word_share_curve`: fewer messages use fewer words). Words
say nothing across languages, so the share is not asked where the question's nearest
message is written in another script (`same_script`): there the scores alone decide.

A question that names someone or something memory names too is about memory whatever
the scores (`name_words`, `written_as_a_name`): "Who is Anthony?" against the one
message that mentions Anthony scores under every floor. A word counts as a name only
where memory always writes it capitalised, so "The" or "What", capitalised when they
start a sentence, never match.

Message hits count only when archived (filed in a topic), as in the fusion: the turn's
own question is stored and indexed before the search, and would otherwise be its own best
hit. With the vector index down the gate is open (`nodes.response.gate.relevant`): the
floors hold for the four signals together, and full-text search alone would rarely clear
them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from core.context import ResponseContext

Signal = Literal["message_vectors", "topic_vectors", "message_bm25", "topic_bm25"]
SIGNALS: tuple[Signal, ...] = ("message_vectors", "topic_vectors", "message_bm25", "topic_bm25")
NULL_QUANTILE = 0.95
WORD_SHARE_QUANTILE = 0.0
"""The share of answerable questions the word-share floor may turn away on the data it
is calibrated on: none, its floor is their lowest share. Words are a coarse signal in a
bilingual memory: a question asked in the other language than its memory shares few."""


@dataclass(frozen=True)
class RelevanceFloors:
    """One floor per signal (`topica eval floor` prints them; see the module docstring)."""

    message_vectors: float
    topic_vectors: float
    message_bm25: float
    topic_bm25: float

    def of(self, signal: Signal) -> float:
        return getattr(self, signal)


@dataclass(frozen=True)
class SizeCurve:
    """A vector floor that grows with the memory searched: the best cosine of an unrelated
    question over n records grows about linearly in ln n (the maximum of more draws),
    up to `cap`, the floor calibrated on full-size memories."""

    base: float
    per_log: float
    cap: float

    def at(self, size: int) -> float:
        return min(self.cap, self.base + self.per_log * math.log(max(size, 1)))

    @property
    def saturation(self) -> int:
        """The memory size from which the floor is `cap`: counting further changes nothing."""
        if self.per_log <= 0:
            return 1
        return max(1, math.ceil(math.exp((self.cap - self.base) / self.per_log)))


def message_curve(context: ResponseContext) -> SizeCurve:
    return SizeCurve(
        context.tuning.message_vector_floor_base,
        context.tuning.message_vector_floor_per_log,
        context.tuning.message_vector_floor,
    )


def topic_curve(context: ResponseContext) -> SizeCurve:
    return SizeCurve(
        context.tuning.topic_vector_floor_base,
        context.tuning.topic_vector_floor_per_log,
        context.tuning.topic_vector_floor,
    )


def word_share_curve(context: ResponseContext) -> SizeCurve:
    """The word-share floor by the memory's archived messages (`bench.word_sizes`)."""
    return SizeCurve(
        context.tuning.word_share_floor_base,
        context.tuning.word_share_floor_per_log,
        context.tuning.word_share_floor,
    )


def floors_of(context: ResponseContext, messages: int, topics: int) -> RelevanceFloors:
    """The floors for a memory of `messages` archived messages and `topics` topics (each
    counted up to its curve's `saturation`)."""
    return RelevanceFloors(
        message_vectors=message_curve(context).at(messages),
        topic_vectors=topic_curve(context).at(topics),
        message_bm25=context.tuning.message_bm25_floor,
        topic_bm25=context.tuning.topic_bm25_floor,
    )


def best_scores(hits: Mapping[Signal, Iterable[tuple[int, float]]]) -> dict[Signal, float | None]:
    """The best score of each signal's hits (None for a signal with no hit)."""
    return {
        signal: max((score for _, score in hits.get(signal, ())), default=None)
        for signal in SIGNALS
    }


def clears_floor(best: Mapping[Signal, float | None], floors: RelevanceFloors) -> bool:
    """Whether at least one signal's best hit reaches its floor."""
    return any(
        (score := best.get(signal)) is not None and score >= floors.of(signal) for signal in SIGNALS
    )


SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
WORD = re.compile(r"\w+")


def name_words(text: str) -> list[str]:
    """The words a question capitalises inside a sentence (not its first word): names, as
    "Anthony" in "Who is Anthony?" or "Марципана" in "Что сказал ветеринар про
    Марципана?". Acronyms (all capitals) and words under three letters are left out."""
    found: dict[str, None] = {}
    for sentence in SENTENCE_END.split(text):
        for word in WORD.findall(sentence)[1:]:
            if len(word) >= 3 and word[0].isupper() and not word.isupper():
                found[word] = None
    return list(found)


def name_pattern(word: str) -> re.Pattern[str]:
    """The words that write the name `word`: the same letters, any case, any ending from
    its sixth letter on ("Марципан" and "Марципана", "Robert" and "Robert's")."""
    stem = word if len(word) < 6 else word[:-2]
    return re.compile(rf"\b{re.escape(stem)}\w*", re.IGNORECASE)


def written_as_a_name(word: str, contents: Iterable[str]) -> bool:
    """Whether `contents` hold `word` (from its sixth letter on, any ending: "Марципан"
    and "Марципана") and always capitalise it: a name, where a word that is capitalised
    only when it starts a sentence ("The", "What") also appears in lower case."""
    pattern = name_pattern(word)
    seen = False
    for content in contents:
        for match in pattern.finditer(content):
            if not match.group()[0].isupper():
                return False
            seen = True
    return seen


CYRILLIC = re.compile(r"[\u0400-\u04ff]")
LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


def script(text: str) -> str | None:
    """ "cyrillic" or "latin", whichever the text's letters mostly are (None: no letters)."""
    cyrillic, latin = len(CYRILLIC.findall(text)), len(LATIN.findall(text))
    if not cyrillic and not latin:
        return None
    return "cyrillic" if cyrillic > latin else "latin"


def same_script(question: str, content: str) -> bool:
    """Whether a message is written in the question's script (either without letters:
    nothing tells them apart, so the same)."""
    asked, written = script(question), script(content)
    return asked is None or written is None or asked == written
