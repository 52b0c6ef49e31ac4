"""Splitting a message into parts Telegram accepts (4096 UTF-16 code units each).

Parts are cut at the best boundary that keeps them reasonably full: a blank
line, then a line end, then a sentence end, then a space, and only as a last
resort inside a word. HTML is never cut inside a tag or an entity; tags open
at a cut are closed at the end of one part and reopened at the start of the
next, so every part is valid markup on its own. Lengths are counted in UTF-16
code units, as Telegram counts them (an emoji outside the BMP is two), and over
the markup itself, which is never shorter than the text Telegram shows.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

TELEGRAM_LIMIT = 4096

# Boundaries, best first; a cut goes right after the match.
BREAKS = (
    re.compile(r"\n[ \t]*\n\s*"),
    re.compile(r"\n\s*"),
    re.compile(r"[.!?…;](?:[\"'»)\]]*)\s+"),
    re.compile(r"\s+"),
)
TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)[^>]*>")
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);")

# A boundary is used only if it keeps the part at least this full.
MIN_FILL = 0.5


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    name: str
    closing: bool
    raw: str


class _Layout:
    """Precomputed facts about one text: UTF-16 prefix sums, uncuttable spans, tag stacks."""

    def __init__(self, text: str, is_html: bool) -> None:
        self.text = text
        self.units = [0]
        for char in text:
            self.units.append(self.units[-1] + (2 if ord(char) > 0xFFFF else 1))
        self.blocked: list[tuple[int, int]] = []
        self.stack_positions: list[int] = [0]
        self.stacks: list[tuple[_Tag, ...]] = [()]
        if is_html:
            self._scan_html()

    def _scan_html(self) -> None:
        spans = [(m.start(), m.end()) for m in ENTITY.finditer(self.text)]
        stack: list[_Tag] = []
        for match in TAG.finditer(self.text):
            spans.append((match.start(), match.end()))
            tag = _Tag(
                match.start(), match.end(), match.group(2).lower(), bool(match.group(1)), match[0]
            )
            if tag.closing:
                for index in range(len(stack) - 1, -1, -1):
                    if stack[index].name == tag.name:
                        del stack[index]
                        break
            else:
                stack.append(tag)
            self.stack_positions.append(tag.end)
            self.stacks.append(tuple(stack))
        # Entities inside a tag's attributes lie within the tag's span: merge
        # overlapping spans, so that `cuttable` sees the whole tag.
        for span_start, span_end in sorted(spans):
            if self.blocked and span_start < self.blocked[-1][1]:
                last_start, last_end = self.blocked[-1]
                self.blocked[-1] = (last_start, max(last_end, span_end))
            else:
                self.blocked.append((span_start, span_end))

    def cost(self, start: int, end: int) -> int:
        return self.units[end] - self.units[start]

    def cuttable(self, position: int) -> bool:
        index = bisect.bisect_right(self.blocked, (position, len(self.text) + 1)) - 1
        if index < 0:
            return True
        span_start, span_end = self.blocked[index]
        return not span_start < position < span_end

    def open_tags(self, position: int) -> tuple[_Tag, ...]:
        return self.stacks[bisect.bisect_right(self.stack_positions, position) - 1]


def _reopen(tags: tuple[_Tag, ...]) -> str:
    return "".join(tag.raw for tag in tags)


def _close(tags: tuple[_Tag, ...]) -> str:
    return "".join(f"</{tag.name}>" for tag in reversed(tags))


def split_message(text: str, *, limit: int = TELEGRAM_LIMIT, html: bool = False) -> list[str]:
    """`text` in parts of at most `limit` UTF-16 code units, cut at safe boundaries."""
    text = text.strip()
    if utf16_length(text) <= limit:
        return [text] if text else []
    layout = _Layout(text, html)
    candidates = [sorted({match.end() for match in pattern.finditer(text)}) for pattern in BREAKS]
    parts: list[str] = []
    start = 0
    while start < len(text):
        prefix = _reopen(layout.open_tags(start))
        end = _best_end(layout, candidates, start, limit - utf16_length(prefix))
        body = text[start:end].rstrip()
        if _has_text(body, html):
            parts.append(prefix + body + _close(layout.open_tags(end)))
        start = end
        while start < len(text) and text[start].isspace():
            start += 1
    return parts


def _fits(layout: _Layout, start: int, end: int, budget: int) -> bool:
    return layout.cost(start, end) + utf16_length(_close(layout.open_tags(end))) <= budget


def _best_end(layout: _Layout, candidates: list[list[int]], start: int, budget: int) -> int:
    """Where the part starting at `start` should end, given `budget` code units for it."""
    text_end = len(layout.text)
    if _fits(layout, start, text_end, budget):
        return text_end
    # The farthest end whose own text fits, before closing tags are counted.
    farthest = bisect.bisect_right(layout.units, layout.units[start] + budget) - 1
    if farthest <= start:
        raise ValueError("limit too small for the open tags at this point")
    enough = start + (farthest - start) * MIN_FILL
    for positions in candidates:
        index = bisect.bisect_right(positions, farthest) - 1
        while index >= 0 and positions[index] > enough:
            end = positions[index]
            if layout.cuttable(end) and _fits(layout, start, end, budget):
                return end
            index -= 1
    end = farthest
    while end > start + 1 and not (layout.cuttable(end) and _fits(layout, start, end, budget)):
        end -= 1
    return end


def _has_text(body: str, html: bool) -> bool:
    visible = TAG.sub("", body) if html else body
    return bool(visible.strip())
