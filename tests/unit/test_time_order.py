"""Time order: chunks and topics follow `created_at`, whatever the order of storage, and
never span a gap over `topic_max_gap`, whatever the chunk interval or the splitter say."""

from __future__ import annotations

from core.records import MessageRow
from core.state import TopicProposal
from nodes.memory.chunking import next_chunk, sittings
from nodes.memory.coverage import make_validate, validate_coverage
from tests.support.messages import message_row

DAY = 24 * 3600.0
HOUR = 3600.0
BIG = 25_000


def timed(ids_and_times: list[tuple[int, float]]) -> list[MessageRow]:
    """Messages in the order given (time order), with these ids and timestamps."""
    return [
        message_row(message_id, position, f"message {message_id}", ts=1_772_442_000.0 + ts)
        for position, (message_id, ts) in enumerate(ids_and_times)
    ]


def proposal(summary: str, start: int, end: int) -> TopicProposal:
    return TopicProposal(summary=summary, start_msg_id=start, end_msg_id=end)


def test_a_gap_over_the_limit_ends_a_sitting_even_with_a_longer_chunk_interval():
    messages = timed([(1, 0), (2, 60), (3, 2 * DAY), (4, 2 * DAY + 60)])
    options = {"interval_s": 7 * DAY, "max_messages": 400, "max_chars": BIG}
    chunk = next_chunk(
        messages, **options, max_gap_s=6 * HOUR, now_ts=2 * DAY + 70, archive_all=False
    )
    assert [m["id"] for m in chunk] == [1, 2]  # finished: ready before the interval passes
    unbounded = next_chunk(messages, **options, now_ts=2 * DAY + 70, archive_all=False)
    assert unbounded == []
    pieces = sittings(messages, interval_s=7 * DAY, max_gap_s=6 * HOUR)
    assert [[m["id"] for m in piece] for piece in pieces] == [[1, 2], [3, 4]]


def test_a_proposed_topic_is_cut_where_messages_lie_days_apart():
    messages = timed([(1, 0), (2, 60), (3, 2 * DAY), (4, 2 * DAY + 60), (5, 2 * DAY + 120)])
    drafts, report = validate_coverage(messages, [proposal("All of it", 1, 5)], BIG, 6 * HOUR)
    assert [draft["message_ids"] for draft in drafts] == [[1, 2], [3, 4, 5]]
    assert report["time_gap_split"] == 1
    assert report["uncovered"] == []
    # Five hours apart is one sitting: a lunch break does not end the subject.
    close = timed([(1, 0), (2, 5 * HOUR)])
    drafts, report = validate_coverage(close, [proposal("Lunch", 1, 2)], BIG, 6 * HOUR)
    assert [draft["message_ids"] for draft in drafts] == [[1, 2]]
    assert report["time_gap_split"] == 0


def test_ranges_run_in_time_order_when_ids_do_not():
    """An older session stored after newer messages: in time order its ids come first but
    are larger. A range runs between its ids' positions in the chunk, not by id value."""
    messages = timed([(10, 0), (11, 60), (3, 120), (4, 180)])
    drafts, report = validate_coverage(
        messages, [proposal("Old start", 10, 11), proposal("Then", 3, 4)], BIG
    )
    assert [(d["summary"], d["message_ids"]) for d in drafts] == [
        ("Old start", [10, 11]),
        ("Then", [3, 4]),
    ]
    assert report["clamped"] == report["unknown_ids"] == 0
    assert report["uncovered"] == []
    whole, _ = validate_coverage(messages, [proposal("Whole", 10, 4)], BIG)
    assert [d["message_ids"] for d in whole] == [[10, 11, 3, 4]]


async def test_the_validate_node_takes_the_gap_from_the_run_context(runtime_for):
    messages = timed([(1, 0), (2, 7 * HOUR)])
    state = {"chunk": messages, "proposals": [proposal("Both", 1, 2)]}
    update = await make_validate()(state, runtime_for(1))
    assert [d["message_ids"] for d in update["drafts"]] == [[1], [2]]
    update = await make_validate()(state, runtime_for(1, topic_max_gap_s=8 * HOUR))
    assert [d["message_ids"] for d in update["drafts"]] == [[1, 2]]
