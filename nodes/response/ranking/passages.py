"""Passages of long messages: what a long message gives a context that it does not fit.

A long message (an assistant's answer of thousands of characters) costs the room of many
short ones, and its relevant part is often one paragraph. So a recalled message longer
than `excerpt_long_answer_chars` is split into passages of at most
`excerpt_passage_chars` (paragraphs, or lines, packed together; a longer one cut at its
sentences, a longer sentence at its words), each scored by its cosine to the turn's
queries. The message's best passage takes the message's place in the ranking and its
other passages come after every recalled message, best first; a message shown in part
is marked where it was cut (`…`). A passage size of 0 turns this off.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np

from core.ports import Embedder
from core.records import MessageRow
from core.text import transcript

CUT = "…"
"""Where a message shown in passages was cut."""
PassageScores = Callable[[Sequence[str]], Sequence[float]]
"""The relevance of each passage to the turn (its best cosine to the queries)."""
Item = tuple[int, int, int | None]
"""(topic id, message id, passage index; None: the whole message)."""
_SENTENCE_END = re.compile(r"(?<=[.!?…:;])\s+")


def split_passages(text: str, limit: int) -> list[str]:
    """`text` as passages of at most `limit` characters (whitespace collapsed): its lines
    packed together in order; a longer line cut at sentence ends, a longer sentence at
    words (a word longer than `limit` is cut where it must)."""
    pieces = [
        piece
        for line in text.splitlines()
        if line.strip()
        for sentence in _SENTENCE_END.split(" ".join(line.split()))
        for piece in _words(sentence, limit)
    ]
    passages: list[str] = []
    for piece in pieces:
        if passages and len(passages[-1]) + 1 + len(piece) <= limit:
            passages[-1] = f"{passages[-1]} {piece}"
        else:
            passages.append(piece)
    return passages


def _words(sentence: str, limit: int) -> list[str]:
    """`sentence` in parts of at most `limit` characters, cut between words."""
    parts: list[str] = []
    for word in sentence.split():
        while len(word) > limit:
            parts.append(word[:limit])
            word = word[limit:]
        if parts and len(parts[-1]) + 1 + len(word) <= limit:
            parts[-1] = f"{parts[-1]} {word}"
        elif word:
            parts.append(word)
    return parts


def long_messages(
    rows: Mapping[int, MessageRow], long_chars: int, passage_chars: int
) -> dict[int, list[str]]:
    """The passages of each of `rows` longer than `long_chars` that split into several."""
    if passage_chars <= 0:
        return {}
    split = {
        message_id: split_passages(row["content"], passage_chars)
        for message_id, row in rows.items()
        if len(row["content"]) > long_chars
    }
    return {message_id: parts for message_id, parts in split.items() if len(parts) > 1}


def passage_order(
    ranked: Sequence[tuple[int, int]],
    passages: Mapping[int, Sequence[str]],
    scores: PassageScores,
    openings: Collection[int] = frozenset(),
    closing: Collection[int] = frozenset(),
) -> list[Item]:
    """`ranked` (topic id, message id), most relevant first, with each message that has
    `passages` replaced by its best passage in place and its other passages, best first,
    after every ranked message (in the order of their messages). A message among
    `openings` (a digest's, `nodes.response.ranking.recap`) is shown by its first passage
    in place and its others in their order (none is scored), before the long answers
    that close the order (`closing`, whole or by their best passages)."""
    scored = [message_id for message_id in passages if message_id not in openings]
    texts = [text for message_id in scored for text in passages[message_id]]
    flat = list(scores(texts)) if texts else []
    by_message = {i: list(range(len(passages[i]))) for i in openings if i in passages}
    start = 0
    for message_id in scored:
        parts = passages[message_id]
        mine = flat[start : start + len(parts)]
        start += len(parts)
        by_message[message_id] = sorted(range(len(parts)), key=lambda i: (-mine[i], i))
    first: list[Item] = []
    later: list[Item] = []
    for topic_id, message_id in ranked:
        order = by_message.get(message_id)
        if order is None:
            first.append((topic_id, message_id, None))
            continue
        first.append((topic_id, message_id, order[0]))
        later.extend((topic_id, message_id, index) for index in order[1:])
    tail = len(first)  # the long answers that close the order
    while tail and (
        first[tail - 1][1] in closing
        or (first[tail - 1][2] is not None and first[tail - 1][1] not in openings)
    ):
        tail -= 1
    own = [item for item in later if item[1] in openings]
    rest = [item for item in later if item[1] not in openings]
    return first[:tail] + own + first[tail:] + rest


def passage_scores(embedder: Embedder, queries: Sequence[str]) -> PassageScores:
    """Each passage's best cosine to `queries` (unit vectors from `embedder`)."""

    def scores(texts: Sequence[str]) -> Sequence[float]:
        if not queries:
            return [0.0] * len(texts)
        wanted = np.stack([embedder.encode_query(query) for query in dict.fromkeys(queries)])
        return (embedder.encode(list(texts)) @ wanted.T).max(axis=1).tolist()

    return scores


def cut_text(parts: Sequence[str], chosen: set[int] | frozenset[int]) -> str:
    """The chosen passages of a message in order, `…` wherever something was left out
    (the whole text's passages when every one is chosen)."""
    shown: list[str] = []
    for index, part in enumerate(parts):
        if index in chosen:
            shown.append(part)
        elif not shown or shown[-1] != CUT:
            shown.append(CUT)
    return " ".join(shown)


def cut_line(
    row: MessageRow,
    parts: Sequence[str],
    chosen: set[int] | frozenset[int],
    day: str | None = None,
) -> str:
    """The message's transcript line with only its `chosen` passages (`cut_text`), under
    a header of `day` (`core.text.transcript`)."""
    return transcript([{**row, "content": cut_text(parts, chosen)}], day=day)
