"""Validate coverage: turn whatever the splitter proposed into topics that cover the chunk.

Invariant: every message of the chunk ends in exactly one draft. Ranges are
clamped to the chunk, overlaps go to the earlier topic, messages nobody
claimed become "General conversation" topics, oversized topics are cut at
message boundaries, topics are cut where consecutive messages lie more than
`topic_max_gap` apart (no topic spans days whatever the splitter said), and proposals
with an empty summary are rejected (their messages count as uncovered). Seed 000,
"Edge cases". The chunk is in time order, which need not be id order (an older session
stored after newer messages): a proposal's range runs between the positions of its two
ids in the chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langgraph.runtime import Runtime

from core.context import MemoryContext
from core.metrics import COVERAGE_GAPS
from core.records import MessageRow
from core.state import CoverageReport, MemoryState, TopicDraft, TopicProposal
from core.text import clip

GENERAL_SUMMARY = "General conversation"


def validate_coverage(
    messages: Sequence[MessageRow],
    proposals: Sequence[TopicProposal],
    max_chars: int,
    max_gap_s: float = float("inf"),
) -> tuple[list[TopicDraft], CoverageReport]:
    report = CoverageReport(
        clamped=0,
        overlaps_resolved=0,
        uncovered=[],
        oversized_split=0,
        time_gap_split=0,
        empty_summaries=0,
        unknown_ids=0,
    )
    if not messages:
        return [], report
    ids = [message["id"] for message in messages]
    owner: list[int | None] = [None] * len(ids)
    spans: list[tuple[int, int, str]] = []
    for proposal in proposals:
        summary = " ".join(str(proposal.get("summary") or "").split())
        if not summary:
            report["empty_summaries"] += 1
            continue
        span = _span(ids, proposal, report)
        if span is not None:
            spans.append((*span, summary))

    kept: list[tuple[list[int], str]] = []
    for start, end, summary in sorted(spans, key=lambda span: (span[0], -span[1])):
        free = [position for position in range(start, end + 1) if owner[position] is None]
        if len(free) < end - start + 1:
            report["overlaps_resolved"] += 1
        if not free:
            continue
        for position in free:
            owner[position] = len(kept)
        kept.append((free, summary))

    for run in _runs([position for position, taken in enumerate(owner) if taken is None]):
        report["uncovered"].extend(ids[position] for position in run)
        opener = next((messages[p] for p in run if messages[p]["role"] == "user"), messages[run[0]])
        quote = clip(opener["content"], 120)
        kept.append((run, f"{GENERAL_SUMMARY}: {quote}" if quote else GENERAL_SUMMARY))

    drafts: list[TopicDraft] = []
    for whole, summary in sorted(kept, key=lambda item: item[0][0]):
        sittings = _cut_at_gaps(whole, messages, max_gap_s)
        report["time_gap_split"] += len(sittings) > 1
        pieces = [
            piece
            for positions in sittings
            for piece in _cut_to_size(positions, messages, max_chars)
        ]
        if len(pieces) > len(sittings):
            report["oversized_split"] += 1
        for number, piece in enumerate(pieces, start=1):
            label = summary if len(pieces) == 1 else f"{summary} (part {number}/{len(pieces)})"
            drafts.append(TopicDraft(summary=label, message_ids=[ids[p] for p in piece]))
    return drafts, report


def _span(
    ids: list[int], proposal: TopicProposal, report: CoverageReport
) -> tuple[int, int] | None:
    """Positions [start, end] of a proposal inside the chunk, clamped; None if outside it."""
    try:
        start_id, end_id = int(proposal["start_msg_id"]), int(proposal["end_msg_id"])
    except (KeyError, TypeError, ValueError):
        report["unknown_ids"] += 1
        return None
    position = {value: index for index, value in enumerate(ids)}
    if start_id in position and end_id in position:
        start, end = position[start_id], position[end_id]
        if start > end:
            start, end = end, start
            report["clamped"] += 1
        return start, end
    if start_id > end_id:
        start_id, end_id = end_id, start_id
        report["clamped"] += 1
    if end_id < ids[0] or start_id > ids[-1]:
        report["unknown_ids"] += 1
        return None
    start = next(position for position, value in enumerate(ids) if value >= start_id)
    end = max(position for position, value in enumerate(ids) if value <= end_id)
    if ids[start] != start_id or ids[end] != end_id:
        report["clamped"] += 1
    if start > end:
        report["unknown_ids"] += 1
        return None
    return start, end


def _grouped(positions: list[int], joins: Callable[[int, int], bool]) -> list[list[int]]:
    """`positions` cut into consecutive groups: a position joins the group before it when
    `joins(last position of that group, position)`."""
    groups: list[list[int]] = []
    for position in positions:
        if groups and joins(groups[-1][-1], position):
            groups[-1].append(position)
        else:
            groups.append([position])
    return groups


def _runs(positions: list[int]) -> list[list[int]]:
    return _grouped(positions, lambda last, position: last == position - 1)


def _cut_at_gaps(
    positions: list[int], messages: Sequence[MessageRow], max_gap_s: float
) -> list[list[int]]:
    """Pieces of `positions` between which consecutive messages lie over `max_gap_s` apart."""
    return _grouped(
        positions,
        lambda last, position: messages[position]["ts"] - messages[last]["ts"] <= max_gap_s,
    )


def _cut_to_size(
    positions: list[int], messages: Sequence[MessageRow], max_chars: int
) -> list[list[int]]:
    """Consecutive pieces of at most `max_chars` (a single longer message stays whole)."""
    pieces: list[list[int]] = [[]]
    size = 0
    for position in positions:
        length = len(messages[position]["content"])
        if pieces[-1] and size + length > max_chars:
            pieces.append([])
            size = 0
        pieces[-1].append(position)
        size += length
    return pieces


def make_validate(_deps: object = None):
    async def validate(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        drafts, report = validate_coverage(
            state.get("chunk", []),
            state.get("proposals", []),
            runtime.context.split_threshold_chars,
            runtime.context.topic_max_gap_s,
        )
        COVERAGE_GAPS.inc(len(report["uncovered"]))
        return {"drafts": drafts, "coverage": report}

    return validate
