"""Turning free text into full-text queries (SQLite FTS5 and PostgreSQL tsquery).

FTS5 has no Russian stemmer, so each word is matched as a prefix of its first
few letters: "маме", "мамы" and "мама" all hit "мам*", "running" hits "runn*".
Words are OR-ed and BM25 ranks documents that match more (and rarer) of them.

SQLite indexes each user's words apart (`user_words`): every word is written behind
its user's tag, so a user's query reads only that user's postings, and BM25's document
frequency of each term counts only that user's documents (`user_match_expression`). The
row count and mean length BM25 also uses are still the whole table's; PostgreSQL's
engine takes all three from the user's rows.
"""

from __future__ import annotations

import math
import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Function words that would otherwise match almost every message.
_STOPWORD_TEXT = """
a an the and or but if of to in on at by for with from about as is are was were be been
being do does did have has had i me my we our you your he she it its they them their
this that these those what which who whom when where why how not no so than too very can
could would should will just there here all any some into over also then и в во не что
он на я с со как а то все она так его но да ты к у же вы за бы по только ее её мне было
вот от меня еще ещё нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был
него до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть
надо ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда
кто этот того потому этого какой совсем ним здесь этом один почти мой тем чтобы нее
сейчас были куда зачем всех никогда можно при наконец два об другой хоть после над
больше тот через эти нас про всего них какая много разве три эту моя впрочем хорошо свою
этой перед иногда лучше чуть том нельзя такой им более всегда конечно всю между это мою
мои
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

PREFIX_LETTERS = 5

BM25_K1, BM25_B = 1.2, 0.75
"""FTS5's BM25 constants, for the scores computed outside SQLite (the PostgreSQL engine,
the passage ranking), so that every engine ranks as FTS5 does."""


def bm25_idf(total: int, frequency: int) -> float:
    """FTS5's inverse document frequency (a term in over half the rows counts 1e-6)."""
    value = math.log((total - frequency + 0.5) / (frequency + 0.5))
    return value if value > 0 else 1e-6


def bm25_term(idf: float, frequency: int, length: float, mean_length: float) -> float:
    """One term's share of FTS5's BM25 for a document of `length` words holding it
    `frequency` times, among documents of `mean_length` words."""
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean_length)
    return idf * frequency * (BM25_K1 + 1) / (frequency + norm)


def query_terms(text: str) -> list[str]:
    """Content words of `text`, lower-cased, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) < 3 and not word.isdigit()):
            continue
        seen.setdefault(word, None)
    return list(seen)


def query_stems(text: str) -> list[str]:
    """The prefixes `text`'s content words are matched by, in order, without repeats."""
    return list(dict.fromkeys(word[:PREFIX_LETTERS] for word in query_terms(text)))


def indexed_words(text: str | None) -> list[str]:
    """`text`'s words as the full-text indexes hold them: lower-cased, in order, repeats
    kept (`user_words` puts each behind its user's tag)."""
    return _WORD.findall((text or "").lower())


def user_tag(user_id: int) -> str:
    """The fixed-width tag every word of `user_id` is indexed behind: `p` or `n` for the
    sign and 16 hex digits. Fixed width, so no tag is a prefix of another user's tag and
    word ("p…01" + "7ab" can never read as "p…17" + "ab")."""
    return ("p" if user_id >= 0 else "n") + format(abs(int(user_id)), "016x")


def user_words(user_id: int, text: str | None) -> str:
    """`text`'s words, lower-cased, each behind the user's tag: what SQLite's full-text
    index holds (its triggers call this as `topica_words`). The query side cuts words with
    the same pattern (`query_terms`), so a stem is a prefix of the indexed word. Changing
    what this returns needs a migration that rebuilds the indexes: a contentless index
    forgets a row by being given the very words it was given for it."""
    tag = user_tag(user_id)
    return " ".join(tag + word for word in indexed_words(text))


def user_phrases(user_id: int, text: str) -> list[str]:
    """FTS5 prefix phrases for `text`'s stems over `user_id`'s words alone, in order."""
    tag = user_tag(user_id)
    return [f'"{tag}{stem}"*' for stem in query_stems(text)]


def user_match_expression(user_id: int, text: str) -> str | None:
    """An FTS5 MATCH expression for `text` over `user_id`'s words alone, or None when it
    has no content words."""
    return any_of(user_phrases(user_id, text)) or None


def any_of(phrases: list[str]) -> str:
    """An FTS5 expression matching a row that holds any of `phrases`."""
    return " OR ".join(phrases)


COMMON_MATCHES = 2_000
"""A query term that matches at least this many of the user's rows is common: it adds
to the score of a row that also holds one of the query's rarer terms, and a row holding
common terms alone ranks only when the rarer terms match fewer rows than were asked for
(Lucene's CommonTermsQuery, Elasticsearch's `cutoff_frequency`). Every row that holds
a rarer term keeps its whole BM25 score, common terms included. FTS5 scores every row
that matches any term and has no early stop; below this many, ranking every match is
cheap. Not a relevance setting: it is never
reached by a conversation of fewer rows."""
