"""The people a question names among those who wrote the messages memory holds.

A saved conversation has several authors (LoCoMo's two friends, a chat exported with
its members), and a question about one of them ("What has Melanie painted?") is
answered by what that person wrote: what happened to someone is told by them. Their
name, meanwhile, is written by the others, who address them by it ("Did you paint that,
Melanie?") and never by themselves. So when a question names some of the authors but
not all:

- the full-text search looks for the rest of the question without those names
  (`searched_messages`, `without_names`), which would otherwise rank the other speakers'
  lines first;
- the excerpts of recalled topics rank a hit written by an author left unnamed only by
  what it lends the messages beside it (`nodes.response.ranking.messages`): the reply to a
  question asked of the named person is kept, the question itself is not; unless both
  the full-text and the vector hits put it among their first (`agreed_hits`): a question
  can name the wrong speaker.

An author is named when a word of their name (three letters or more, not a function
word) and a capitalised word of the question begin alike, the way full-text search
matches words (`stores.fulltext.query_stems`: "Каролины" names "Каролина", "Melanie's"
names "Melanie"). Only a capitalised word names anyone: a user called Max asking about
"the max dose" names nobody. Messages with no author (a user with no name) are never
told apart.

The assistant is a speaker too. Its long answers come after every other message
(`nodes.response.ranking.messages.long_answers`): the user's own words hold what the user
said, did and decided. A question about what the assistant said ("What did you recommend
for the rate limit?", "Что ты советовал про сон?") asks for exactly those answers, so for
it they keep their rank (`asks_for_answers`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from stores.fulltext import query_stems

ANSWERS_ASKED = re.compile(
    r"\bdid you (recommend|suggest|advise|propose|say|tell|explain|mention)\b"
    r"|\byou (recommended|suggested|advised|proposed|said|told|explained|mentioned)\b"
    r"|\b(ты|вы)\s+(мне\s+|нам\s+)?(советовал|рекомендовал|предлагал|говорил|сказал|объяснял|упоминал)",
    re.IGNORECASE,
)
"""A question about what the assistant said, in the past: "did you recommend", "you
suggested", "ты советовал(а)", "вы говорили". A request ("What would you suggest?") is not
one: it asks for new advice, which the user's own words shape."""


def asks_for_answers(queries: Sequence[str]) -> bool:
    """Whether a query asks what the assistant said (`ANSWERS_ASKED`)."""
    return any(ANSWERS_ASKED.search(query) for query in queries)


def name_stems(text: str) -> set[str]:
    """The stems of `text`'s capitalised words: those that may name someone."""
    return {stem for word in text.split() if word[:1].isupper() for stem in query_stems(word)}


def named_speakers(queries: Sequence[str], authors: Iterable[str | None]) -> frozenset[str]:
    """The authors the queries name, when they name some of `authors` but not all; else
    none (every author named, or one author only, tells no one apart)."""
    asked = {stem for query in queries for stem in name_stems(query)}
    present = {author for author in authors if author}
    named = frozenset(author for author in present if asked & set(query_stems(author)))
    return named if named != present else frozenset()


def unnamed_authors(queries: Sequence[str], authors: Mapping[int, str | None]) -> frozenset[int]:
    """The messages among `authors` (message id: its author) written by someone the
    queries leave out while naming another author (`named_speakers`); else none."""
    named = named_speakers(queries, authors.values())
    if not named:
        return frozenset()
    return frozenset(i for i, author in authors.items() if author and author not in named)


def agreed_hits(
    text_hits: Sequence[Sequence[int]], vector_hits: Sequence[Sequence[int]], depth: int
) -> frozenset[int]:
    """The messages a full-text list and a vector list both rank among their first `depth`.

    A question can name the wrong one of two speakers ("What is Melanie's hand-painted
    bowl a reminder of?" of a bowl Caroline told about): when the words and the meaning of
    the question both find the same message first, that message is what was asked about,
    whoever the question names, and it is not ranked as the unnamed author's
    (`unnamed_authors`)."""
    words = {i for hits in text_hits for i in hits[:depth]}
    return frozenset(i for hits in vector_hits for i in hits[:depth] if i in words)


def without_names(query: str, names: Iterable[str]) -> str | None:
    """`query` without its capitalised words that name one of `names`; None when nothing
    is left to search for, or nothing was taken out."""
    stems = {stem for name in names for stem in query_stems(name)}
    words = query.split()
    kept = [word for word in words if not stems & name_stems(word)]
    if len(kept) == len(words) or not query_stems(" ".join(kept)):
        return None
    return " ".join(kept)


def with_prompts(
    ranked: Sequence[tuple[int, int]],
    replies: Mapping[int, Sequence[tuple[int, int]]],
    roles: Mapping[int, str],
) -> list[tuple[int, int]]:
    """`ranked` (topic id, message id) with each of the assistant's messages preceded by
    the user's message it answered, when that one is further down (or its own place when
    it comes first). `replies` are `replies_after`'s: the user's message whose next one
    (one place on, in the same sitting) is the answer asked it.

    For a question about what the assistant said (`asks_for_answers`) an answer is the
    evidence, but what it answered ("I have a scholarship deadline on May 15 and a visa
    appointment …") holds the user's own terms the answer was shaped by, and is short
    beside it; shown apart, the answer reads as advice about nothing in particular."""
    prompt_of = {
        reply: asked
        for asked, found in replies.items()
        if roles.get(asked) == "user"
        for reply, places in found
        if places == 1 and roles.get(reply) == "assistant"
    }
    topic_of = {message_id: topic_id for topic_id, message_id in ranked}
    ordered: list[tuple[int, int]] = []
    taken: set[int] = set()
    for topic_id, message_id in ranked:
        if message_id in taken:
            continue
        asked = prompt_of.get(message_id)
        if asked is not None and asked not in taken and asked in topic_of:
            ordered.append((topic_of[asked], asked))
            taken.add(asked)
        ordered.append((topic_id, message_id))
        taken.add(message_id)
    return ordered
