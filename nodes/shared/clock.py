"""The turn's clock (`ResponseContext.now_iso` when a run fixes it, else the wall clock), and
the pauses that end a sitting."""

from __future__ import annotations

from datetime import UTC, datetime

from core.context import ResponseContext
from core.records import parse_timestamp


def turn_moment(context: ResponseContext) -> datetime:
    return parse_timestamp(context.now_iso) if context.now_iso else datetime.now(UTC)


def prompt_date(moment: datetime) -> str:
    """`2026-03-09 13:15 (Monday)`: what prompts show as today."""
    return moment.strftime("%Y-%m-%d %H:%M (%A)")


def ends_sitting(gap_s: float, *, interval_s: float, max_gap_s: float) -> bool:
    """Whether a pause this long ends a sitting (what lies before it is finished): the
    archiving's thresholds (`nodes.memory.chunking`), which the excerpts' shares stop at
    too (`nodes.response.ranking.messages.replies_after`)."""
    return gap_s >= interval_s or gap_s > max_gap_s
