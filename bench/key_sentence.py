"""The key-sentence view of recall at a budget: evidence shown, not only touched.

An evidence message counts as recalled at a budget when it, or one of its passages, is
in the context. Topica shows a long message by its passages, so a rule that cuts
messages finer can raise that measure without showing more of what answers the
question. Neither benchmark marks the evidence span inside a message, so this view
stands in for it: a message's *key sentence* is the one sharing the most content words
(`stores.fulltext.query_stems`: stems, stop words left out, English and Russian) with
the question and its reference answer, and a message shown in part counts only when the
passages shown hold that sentence. A message shown whole always counts; a message none
of whose sentences shares a word counts as in the plain measure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from bench.metrics import Packed
from core.text import neutralize
from stores.fulltext import query_stems

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")


def sentences(text: str) -> list[str]:
    """`text`'s sentences and lines, whitespace collapsed, empty ones left out."""
    return [" ".join(part.split()) for part in _SENTENCE_END.split(text) if part.strip()]


def key_sentence(text: str, question: str, answer: str) -> str | None:
    """The sentence of `text` sharing the most content-word stems with the question and
    its reference answer (the first on a tie), as a context shows it (`neutralize`d, as
    transcript lines are); None when no sentence shares one."""
    probe = set(query_stems(f"{question} {answer}"))
    best, shared = None, 0
    for sentence in sentences(neutralize(text)):
        count = len(probe.intersection(query_stems(sentence)))
        if count > shared:
            best, shared = sentence, count
    return best


def recall_key(
    packed: Packed,
    evidence: Sequence[str],
    keys: Mapping[str, str | None],
    unit_of: Mapping[str, str],
) -> float:
    """1.0 when every evidence message is in the context and, where its unit is shown in
    part (`Packed.excerpts`), the shown text holds its key sentence (`keys`)."""
    for message_id in evidence:
        if message_id not in packed.message_ids:
            return 0.0
        key = keys.get(message_id)
        shown = packed.excerpts.get(unit_of.get(message_id, ""))
        if key is not None and shown is not None and key not in shown:
            return 0.0
    return 1.0
