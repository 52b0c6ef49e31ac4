"""Full-text hits with a long message ranked by its best passage.

BM25 ranks whole messages, and its length norm sinks a long message (an assistant's
answer of thousands of characters) whose one relevant paragraph holds every word of the
question below short messages that hold one of them; its statistics (the mean length, a
word's share of documents) are those of whole messages too. So, for the evidence the
context is filled from, the store's deeper full-text list (`excerpt_text_pool`) is
ranked again as units: a message longer than a passage (`excerpt_passage_chars`) is its
passages (`nodes.response.ranking.passages.split_passages`), a shorter one itself; each
unit is scored by FTS5's formula and constants over the list's units (their count, mean
length and each stem's units), and a message by its best unit. The best `limit` are the
hits. A list with no message longer than a passage is the store's as it is (and
`nodes.response.hits.evidence_search` reads no deeper list when the store's best page
holds none), so a conversation of short messages ranks exactly as the store ranks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodes.response.ranking.passages import split_passages
from stores.fulltext import bm25_idf, bm25_term, indexed_words, query_stems


def passage_ranked(
    hits: Sequence[tuple[int, float]],
    pool: Sequence[tuple[int, float]],
    texts: Mapping[int, str],
    query: str,
    passage_chars: int,
    limit: int,
) -> list[tuple[int, float]]:
    """The best `limit` of `pool` (the store's deeper list, (id, score), best first) by
    their best unit, `hits` (its best `limit`) as they are when no message of the pool
    is longer than a passage; `texts` are the pool's messages by id. Best first."""
    stems = query_stems(query)
    if not stems or passage_chars <= 0:
        return list(hits[:limit])
    units = {
        i: split_passages(texts[i], passage_chars) if len(texts[i]) > passage_chars else [texts[i]]
        for i, _ in pool
        if i in texts
    }
    if all(len(found) == 1 for found in units.values()):
        return list(hits[:limit])
    words = {i: [indexed_words(unit) for unit in found] for i, found in units.items()}
    stats = _Stats.of([unit for found in words.values() for unit in found], stems)
    place = {message_id: n for n, (message_id, _) in enumerate(pool)}
    scores = {i: max(stats.score(unit) for unit in found) for i, found in words.items()}
    best = sorted(scores, key=lambda i: (-scores[i], place[i]))[:limit]
    return [(i, scores[i]) for i in best]


class _Stats:
    """BM25 over a list of documents: each stem's idf and their mean length."""

    def __init__(self, stems: Sequence[str], idf: Sequence[float], mean_length: float):
        self.stems, self.idf, self.mean_length = stems, idf, mean_length

    @classmethod
    def of(cls, documents: Sequence[Sequence[str]], stems: Sequence[str]) -> _Stats:
        total = len(documents)
        frequency = [sum(any(w.startswith(s) for w in d) for d in documents) for s in stems]
        idf = [bm25_idf(total, f) for f in frequency]
        mean = sum(len(d) for d in documents) / total if total else 1.0
        return cls(stems, idf, mean or 1.0)

    def score(self, words: Sequence[str]) -> float:
        """BM25 of one document (its words) for the stems."""
        total = 0.0
        for stem, idf in zip(self.stems, self.idf, strict=True):
            frequency = sum(word.startswith(stem) for word in words)
            if frequency:
                total += bm25_term(idf, frequency, len(words), self.mean_length)
        return total
