"""Retrieval metrics over ranked units of messages, and context packing at a token budget.

Every method (Topica's topics, single messages, LoCoMo sessions, the full
conversation) answers a question with a ranked list of `Unit`s: a group of
messages identified by their external ids (LoCoMo dia_ids), rendered as a
header and one transcript line per message. Evidence is a list of dia_ids.

- recall_all@k: every evidence message lies in the top k units (0 or 1 per question);
- recall_any@k: at least one does;
- NDCG@k: graded gain = the evidence messages a unit holds that no higher unit
  held; the ideal ranking is the method's own units sorted by that gain, so a
  method is compared with the best it could have done with its own units;
- recall at a budget: what the method's context holds at that budget; an evidence
  message counts when its line is in the context. A baseline's context is its order
  (`Retrieval.fill`: which message goes in next) cut at the longest prefix whose
  rendered context stays within the budget (`pack`); Topica's is what the response
  graph's context fill puts there (`Retrieval.fit`), a long message counting when one
  of its passages is shown;
- the key-sentence view of recall at a budget (`bench.key_sentence`): a message shown
  only by some of its passages counts only when they hold its key sentence.

The context renders the chosen messages grouped by unit (units in the order they
were first drawn on, each with its header once, its messages in conversation
order), the way the response graph shows topics. Tokens are counted with
LangChain's `count_tokens_approximately`, the counter the response graph budgets with.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages.utils import count_tokens_approximately

BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Unit:
    """One retrieved item: its messages (external ids, conversation order) and its header."""

    key: str
    message_ids: tuple[str, ...]
    header: str = ""
    excerpt_header: str | None = None
    """The header shown when only some of the unit's messages are in context (None: `header`)."""


@dataclass(frozen=True)
class Packed:
    """What a context of at most `budget` tokens holds."""

    message_ids: frozenset[str]
    tokens: int
    units: int
    """Units with at least one message in the context."""
    excerpts: Mapping[str, str] = field(default_factory=dict)
    """The text shown of each unit shown in part, by unit key, whitespace collapsed (a
    unit absent here shows its messages whole; a baseline never cuts one)."""


Fitter = Callable[[Sequence[int]], Mapping[int, Packed]]
"""What a method's context holds at each of some budgets (tokens)."""


def count_tokens(text: str) -> int:
    """Tokens of `text` as one message, the way the response graph counts its context."""
    return count_tokens_approximately([text]) if text else 0


def whole_units(units: Sequence[Unit]) -> list[tuple[str, str]]:
    """The plain fill order: each unit's messages in turn, in conversation order."""
    return [(unit.key, message_id) for unit in units for message_id in unit.message_ids]


def render(fill: Sequence[tuple[str, str]], units: Mapping[str, Unit], lines: Mapping[str, str]):
    """The context holding the (unit key, message id) pairs of `fill`, grouped by unit."""
    chosen: dict[str, set[str]] = {}
    for key, message_id in fill:
        chosen.setdefault(key, set()).add(message_id)
    blocks = []
    for key, ids in chosen.items():
        unit = units[key]
        body = "\n".join(lines[i] for i in unit.message_ids if i in ids)
        whole = all(i in ids for i in unit.message_ids)
        header = unit.header if whole or unit.excerpt_header is None else unit.excerpt_header
        blocks.append(f"{header}\n{body}" if header else body)
    return BLOCK_SEPARATOR.join(blocks)


def pack(
    fill: Sequence[tuple[str, str]],
    units: Mapping[str, Unit],
    lines: Mapping[str, str],
    budget: int,
) -> Packed:
    """The longest prefix of `fill` whose rendered context is within `budget` tokens.

    The context only grows as the prefix does, so a search finds the cut: doubling the
    prefix until it does not fit, then halving the gap (a budget is a small part of a
    conversation, and the prefixes rendered stay near its size).
    """
    low, high = 0, 1
    while high < len(fill) and count_tokens(render(fill[:high], units, lines)) <= budget:
        low, high = high, high * 2
    high = min(high, len(fill))
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(render(fill[:middle], units, lines)) <= budget:
            low = middle
        else:
            high = middle - 1
    kept = fill[:low]
    return Packed(
        message_ids=frozenset(message_id for _, message_id in kept),
        tokens=count_tokens(render(kept, units, lines)),
        units=len({key for key, _ in kept}),
    )


def ids_at_k(units: Sequence[Unit], k: int) -> set[str]:
    return {message_id for unit in units[:k] for message_id in unit.message_ids}


def recall_all(retrieved: Iterable[str], evidence: Sequence[str]) -> float:
    """1.0 when every evidence message was retrieved (evidence must not be empty)."""
    found = set(retrieved)
    return float(all(item in found for item in evidence))


def recall_any(retrieved: Iterable[str], evidence: Sequence[str]) -> float:
    found = set(retrieved)
    return float(any(item in found for item in evidence))


def evidence_fraction(retrieved: Iterable[str], evidence: Sequence[str]) -> float:
    found = set(retrieved)
    return sum(item in found for item in evidence) / len(evidence)


def ndcg_at_k(
    units: Sequence[Unit], evidence: Sequence[str], unit_of: Mapping[str, str], k: int
) -> float:
    """NDCG@k with gain = new evidence messages per unit; `unit_of` maps each message of
    the collection to the key of the method's unit that holds it (for the ideal ranking)."""
    wanted = set(evidence)
    seen: set[str] = set()
    dcg = 0.0
    for rank, unit in enumerate(units[:k], start=1):
        gain = len((wanted & set(unit.message_ids)) - seen)
        seen.update(unit.message_ids)
        dcg += gain / math.log2(rank + 1)
    ideal_gains = sorted(
        Counter(unit_of[item] for item in wanted if item in unit_of).values(), reverse=True
    )
    ideal = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal_gains[:k], start=1))
    return dcg / ideal if ideal else 0.0


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, linear interpolation), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
