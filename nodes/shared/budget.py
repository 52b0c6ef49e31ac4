"""Token budgets for context layers, counted with LangChain's approximate counter.

No tokenizer is downloaded or loaded: `count_tokens_approximately` (about four characters
a token) is what every layer is measured and cut with.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

CHARS_PER_TOKEN = 4
ELLIPSIS = "…"


def tokens(text: str) -> int:
    """Tokens of a piece of text (no per-message overhead: layers share one message)."""
    return count_tokens_approximately([text], extra_tokens_per_message=0) if text else 0


def message_tokens(messages: Sequence[BaseMessage]) -> int:
    return count_tokens_approximately(messages) if messages else 0


def truncate_to_tokens(text: str, budget: int) -> str:
    """`text` if it fits in `budget` tokens, else its head cut at a line or word boundary."""
    if tokens(text) <= budget:
        return text
    if budget <= 0:
        return ""
    limit = max(1, budget * CHARS_PER_TOKEN - 16)
    while limit > 0:
        cut = text[:limit]
        boundary = max(cut.rfind("\n"), cut.rfind(" "))
        if boundary > limit // 2:
            cut = cut[:boundary]
        cut = cut.rstrip() + ELLIPSIS
        if tokens(cut) <= budget:
            return cut
        limit -= CHARS_PER_TOKEN * 4
    return ""


def lines_within(lines: Sequence[str], budget: int) -> list[str]:
    """The leading lines whose total (one per line) fits in `budget` tokens."""
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = tokens(line)
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return kept
