"""What of the ranked messages fits a context's budget of characters."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from core.records import MessageRow
from core.text import transcript
from nodes.response.ranking.passages import CUT, Item, cut_line
from nodes.response.ranking.recall import Recall, rank_items
from nodes.response.ranking.weights import Ranking

BLOCK_CHARS = 4
"""A topic block's characters besides its header and lines: the blank line after the
header and the blank line between blocks (`render_topics_content`)."""


@dataclass(frozen=True)
class Filled:
    """What of the ranked messages one budget holds (`fill_budgets`)."""

    topics: list[int]
    """The topics that keep something, in order."""
    excerpts: dict[int, str]
    """An excerpt for each topic shown in part (a topic absent here is shown whole)."""
    shown: frozenset[int]
    """The messages the context shows, whole or by some of their passages (the given
    excerpts' messages are not known here and not among them)."""
    chars: int
    """The characters the shown topics take, headers and blank lines included."""


def fill_budget(
    members: Sequence[tuple[int, Sequence[MessageRow]]],
    headers: Mapping[int, tuple[int, int]],
    recall: Recall,
    ranking: Ranking,
    max_chars: int,
    given: Mapping[int, str] | None = None,
    days: Mapping[int, str] | None = None,
) -> Filled:
    """The topics of `headers` cut to their most relevant messages within `max_chars`.

    `headers` are every topic to show, in order, with its header's size when shown in
    part and whole; `members` are the messages of those not `given` (the reranker's
    excerpts, which keep their text and take their room first). `days` are the dates the
    topics' headers give (`topic_date`): a message of that day shows its time alone
    (`core.text.transcript`)."""
    ranked = rank_items(members, recall, ranking)
    return fill_budgets(members, headers, ranked, [max_chars], given, days)[0]


def fill_budgets(
    members: Sequence[tuple[int, Sequence[MessageRow]]],
    headers: Mapping[int, tuple[int, int]],
    ranked: tuple[Sequence[Item], Mapping[int, Sequence[str]]],
    budgets: Sequence[int],
    given: Mapping[int, str] | None = None,
    days: Mapping[int, str] | None = None,
) -> list[Filled]:
    """`fill_budget` at each of `budgets` (characters) from `members` ranked once
    (`rank_items`: the items in order and the passages of the long messages)."""
    given = dict(given or {})
    used = sum(headers[t][0] + BLOCK_CHARS + len(text) for t, text in given.items() if t in headers)
    items, passages = ranked
    day_of = {m["id"]: (days or {}).get(t) for t, messages in members for m in messages}
    lines = {m: transcript([row], day=day_of[m]) for m, row in _rows(members).items()}
    filled = []
    for max_chars in budgets:
        fitted = Fitting(members, passages, headers, used, lines, day_of)
        for item in items:
            fitted.add(item, max_chars)
        filled.append(fitted.filled(given))
    return filled


class Fitting:
    """What of the ranked items fits a budget of characters (`fill_budget`): a topic
    costs its short header when first shown and its full one when it becomes whole; a
    message costs its line, a passage its text (and the line's label, for a message's
    first). An item that does not fit is skipped: a shorter one further down may."""

    def __init__(
        self,
        members: Sequence[tuple[int, Sequence[MessageRow]]],
        passages: Mapping[int, Sequence[str]],
        headers: Mapping[int, tuple[int, int]],
        used: int,
        lines: Mapping[int, str],
        day_of: Mapping[int, str | None],
    ) -> None:
        self.members = members
        self.rows = _rows(members)
        self.lines = lines
        self.day_of = day_of
        self.sizes = {topic_id: len(messages) for topic_id, messages in members}
        self.passages = passages
        self.headers = headers
        self.used = used
        self.whole: dict[int, set[int]] = defaultdict(set)
        self.parts: dict[int, set[int]] = defaultdict(set)
        self.opened: set[int] = set()
        self.complete: set[int] = set()
        self.charged: dict[int, int] = defaultdict(int)
        """The characters charged for each message's passages so far."""

    def add(self, item: Item, max_chars: int) -> None:
        topic_id, message_id, index = item
        whole = len(self.lines[message_id]) + 1
        if index is None:
            cost, completes = whole, True
        else:
            label = whole - 1 - len(self.rows[message_id]["content"])
            cost = len(self.passages[message_id][index]) + 2 * len(CUT) + 2
            cost += 0 if self.parts[message_id] else label + 1
            completes = len(self.parts[message_id]) + 1 == len(self.passages[message_id])
            if completes:  # shown whole now, as written (a paste's indents and line ends)
                cost = max(cost, whole - self.charged[message_id])
        charged = cost
        short, full = self.headers[topic_id]
        if topic_id not in self.opened:
            cost += short + BLOCK_CHARS
        if completes and len(self.whole[topic_id]) + 1 == self.sizes[topic_id]:
            cost += full - short  # the topic becomes whole: its full header
        if self.used + cost > max_chars:
            return
        self.used += cost
        self.charged[message_id] += charged
        self.opened.add(topic_id)
        if index is not None:
            self.parts[message_id].add(index)
        if completes:
            self.whole[topic_id].add(message_id)
            self.complete.add(message_id)

    def filled(self, given: Mapping[int, str]) -> Filled:
        """What was fitted, `given` excerpts first in their topics' place."""
        excerpts = dict(given)
        for topic_id, messages in self.members:
            shown = [m for m in messages if self.line(m) is not None]
            if shown and len(self.whole[topic_id]) < len(messages):
                excerpts[topic_id] = "\n".join(self.line(m) or "" for m in shown)
        kept = [t for t in self.headers if t in given or t in self.opened]
        shown_ids = frozenset(self.complete) | frozenset(
            m for m, parts in self.parts.items() if parts
        )
        return Filled(kept, excerpts, shown_ids, self.used)

    def line(self, message: MessageRow) -> str | None:
        """The message's line as shown (in part: its chosen passages), None if not shown."""
        message_id = message["id"]
        if message_id in self.complete:
            return self.lines[message_id]
        if self.parts.get(message_id):
            parts = self.parts[message_id]
            return cut_line(message, self.passages[message_id], parts, self.day_of[message_id])
        return None


def _rows(members: Sequence[tuple[int, Sequence[MessageRow]]]) -> dict[int, MessageRow]:
    return {m["id"]: m for _, messages in members for m in messages}
