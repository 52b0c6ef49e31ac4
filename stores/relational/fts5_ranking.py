"""Ranking a user's rows in an FTS5 index by BM25, with common terms scored only where
they matter (`stores.fulltext.COMMON_MATCHES`).

FTS5 scores every row that matches any phrase of a query before it sorts them: it has no
early stop such as Lucene's block-max WAND. A query that names a common word, or whose
prefix stem also begins a common word, makes it score thousands of a large user's rows to
keep fifty. Here the query's phrases are first counted, each up to `COMMON_MATCHES` rows.
Where some are common and some are not, two smaller queries rank:

- the rare phrases alone: every row holding a rare phrase and no common one gets the
  score the whole query gives it (a phrase a row does not hold adds nothing to it);
- the common phrases AND the rare ones: every row holding both gets its whole score.
  FTS5 steps through that intersection without scoring the common phrases' other rows.

Both are cut to the page asked for, and their union's best page is the whole query's
best page among the rows that hold a rare phrase, scores included: a row left out of the
first query's page scores no higher than the rows in it. The rows that hold only common
phrases are left out, unless the rare phrases match fewer rows than the page, when the
whole query ranks as before. A query with no common phrase, or nothing but common ones,
ranks as one query, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stores.fulltext import COMMON_MATCHES, any_of, user_match_expression, user_phrases

Read = Callable[[str, Sequence[Any]], list[Any]]
"""Runs a read statement with parameters and returns its rows."""


@dataclass(frozen=True)
class Fts5Ranking:
    """How one query over one FTS5 index ranks (`rank_plan`): `rare` is the whole query when
    `common` is empty."""

    index: str
    rare: tuple[str, ...]
    common: tuple[str, ...] = ()

    def best(self, read: Read, page: int) -> list[tuple[int, float]]:
        """The best `page` rows: (rowid, score), best first, larger is better."""
        if not self.common:
            return self._ranked(read, any_of(list(self.rare)), page)
        rare = any_of(list(self.rare))
        found = dict(self._ranked(read, rare, page))
        found.update(self._ranked(read, f"({any_of(list(self.common))}) AND ({rare})", page))
        if len(found) < page:  # the rare phrases hold fewer rows than a page
            return self._ranked(read, any_of([*self.rare, *self.common]), page)
        return sorted(found.items(), key=lambda hit: (-hit[1], hit[0]))[:page]

    def _ranked(self, read: Read, expression: str, limit: int) -> list[tuple[int, float]]:
        index = self.index
        rows = read(
            f"SELECT rowid, -bm25({index}) AS score FROM {index} "
            f"WHERE {index} MATCH ? ORDER BY score DESC, rowid LIMIT ?",
            (expression, limit),
        )
        return [(row[0], row[1]) for row in rows]


def rank_plan(read: Read, index: str, user_id: int, text: str) -> Fts5Ranking | None:
    """How `text` ranks over the user's rows of `index`, or None when it has no content
    words. One statement counts each phrase's rows, none past `COMMON_MATCHES`."""
    phrases = user_phrases(user_id, text)
    if len(phrases) < 2:
        return Fts5Ranking(index, tuple(phrases)) if phrases else None
    probe = f"SELECT count(*) FROM (SELECT 1 FROM {index} WHERE {index} MATCH ? LIMIT ?)"
    counts = read(
        "SELECT " + ", ".join(f"({probe})" for _ in phrases),
        [value for phrase in phrases for value in (phrase, COMMON_MATCHES)],
    )[0]
    common = tuple(p for p, count in zip(phrases, counts, strict=True) if count >= COMMON_MATCHES)
    rare = tuple(p for p in phrases if p not in common)
    if not common or not rare:
        return Fts5Ranking(index, tuple(phrases))
    return Fts5Ranking(index, rare, common)


def match_probe(table: str, user_id: int, text: str, where: str) -> tuple[str, list[Any]] | None:
    """A query of the user's rows of `table` whose words match `text` (as `fulltext` matches
    them) and that pass `where`, unranked, with its parameters; None without content words.
    The index is read first (`CROSS JOIN` keeps that order): led by the table's own index
    of the user's rows, SQLite would look the text up once for each of them."""
    expression = user_match_expression(user_id, text)
    if expression is None:
        return None
    index = f"{table}_fts"
    sql = (
        f"SELECT 1 FROM {index} CROSS JOIN {table} r ON r.id = {index}.rowid "
        f"WHERE {index} MATCH ? AND r.user_id = ? {where}"
    )
    return sql, [expression, user_id]
