"""Chunking: seed 000's triggers (inactivity, message count, characters), sittings and
staleness. A pause ends a sitting, not a chunk: a chunk holds as many finished sittings as
fit, so one splitter call reads them all (issue 15)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from core.deps import Deps
from core.records import MessageRow
from nodes.memory.chunking import make_load_chunk, next_chunk, route_after_load, sittings
from tests.support.messages import message_row

HOUR = 3600.0


def rows(times: Sequence[float], contents: Sequence[str] | None = None) -> list[MessageRow]:
    contents = contents or ["0123456789"] * len(times)
    return [
        message_row(index + 1, index, content, ts)
        for index, (ts, content) in enumerate(zip(times, contents, strict=True))
    ]


def chunk_ids(messages: Sequence[MessageRow], **overrides) -> list[int]:
    options = {
        "interval_s": HOUR,
        "max_messages": 400,
        "max_chars": 25_000,
        "now_ts": 0.0,
        "archive_all": True,
    } | overrides
    return [message["id"] for message in next_chunk(messages, **options)]


def test_a_gap_of_exactly_the_interval_ends_a_sitting_and_the_sitting_is_ready():
    messages = rows([0, 60, 60 + HOUR, 120 + HOUR])
    assert chunk_ids(messages, archive_all=False, now_ts=130 + HOUR) == [1, 2]
    assert [[m["id"] for m in piece] for piece in sittings(messages, interval_s=HOUR)] == [
        [1, 2],
        [3, 4],
    ]


def test_a_gap_just_under_the_interval_does_not():
    messages = rows([0, 60, 60 + HOUR - 1])
    assert chunk_ids(messages, archive_all=False, now_ts=70 + HOUR - 1) == []
    assert len(sittings(messages, interval_s=HOUR)) == 1


def test_finished_sittings_share_one_chunk():
    messages = rows([0, 60, 60 + HOUR, 120 + HOUR, 3 * HOUR, 3 * HOUR + 60])
    assert chunk_ids(messages) == [1, 2, 3, 4, 5, 6]
    assert chunk_ids(messages, archive_all=False, now_ts=3 * HOUR + 70) == [1, 2, 3, 4]


def test_a_chunk_cut_for_size_ends_where_a_sitting_ends():
    messages = rows([0, 60, 60 + HOUR, 120 + HOUR, 180 + HOUR])
    assert chunk_ids(messages, max_messages=4) == [1, 2]
    assert chunk_ids(messages, max_chars=45) == [1, 2]
    # One sitting longer than the limit is cut where the limit falls.
    assert chunk_ids(messages[2:], max_messages=2) == [3, 4]


def test_the_chunk_ends_at_max_messages():
    assert chunk_ids(rows([0, 1, 2, 3, 4]), max_messages=2) == [1, 2]


def test_the_chunk_ends_before_the_message_that_would_pass_max_chars():
    messages = rows([0, 1, 2, 3])  # 10 characters each
    assert chunk_ids(messages, max_chars=29) == [1, 2]
    assert chunk_ids(messages, max_chars=30) == [1, 2, 3]


def test_characters_are_counted_not_bytes():
    messages = rows([0, 1, 2], ["привет мир", "ещё текст!", "третий"])  # 10 + 10 + 6 characters
    assert chunk_ids(messages, max_chars=26) == [1, 2, 3]


def test_a_single_message_longer_than_max_chars_is_a_chunk_of_its_own():
    messages = rows([0, 1], ["x" * 100, "short"])
    assert chunk_ids(messages, max_chars=50) == [1]
    assert chunk_ids(messages[1:], max_chars=50) == [2]


def test_the_trailing_chunk_waits_until_it_is_stale():
    messages = rows([0, 60, 120])
    assert chunk_ids(messages, archive_all=False, now_ts=120 + HOUR - 1) == []
    assert chunk_ids(messages, archive_all=False, now_ts=120 + HOUR) == [1, 2, 3]


def test_archive_all_takes_the_trailing_chunk_at_once():
    assert chunk_ids(rows([0, 60, 120]), archive_all=True, now_ts=121) == [1, 2, 3]


def test_a_finished_chunk_is_ready_even_while_the_conversation_goes_on():
    messages = rows([0, 60, 60 + 2 * HOUR, 70 + 2 * HOUR])
    assert chunk_ids(messages, archive_all=False, now_ts=80 + 2 * HOUR) == [1, 2]
    assert chunk_ids(rows([0, 1, 2]), archive_all=False, max_messages=2, now_ts=3) == [1, 2]


def test_no_messages_no_chunk():
    assert chunk_ids([]) == []


@given(
    gaps=st.lists(st.floats(min_value=0, max_value=3 * HOUR), min_size=1, max_size=60),
    lengths=st.lists(st.integers(min_value=0, max_value=80), min_size=60, max_size=60),
    max_messages=st.integers(min_value=1, max_value=10),
    max_chars=st.integers(min_value=1, max_value=200),
)
def test_chunking_everything_partitions_the_messages_in_order(
    gaps, lengths, max_messages, max_chars
):
    times = [sum(gaps[: index + 1]) for index in range(len(gaps))]
    pending = rows(times, ["x" * lengths[index] for index in range(len(times))])
    chunks = []
    while pending:
        chunk = next_chunk(
            pending,
            interval_s=HOUR,
            max_messages=max_messages,
            max_chars=max_chars,
            now_ts=0.0,
            archive_all=True,
        )
        assert chunk, "archive_all must always make progress"
        assert len(chunk) <= max_messages
        assert len(chunk) == 1 or sum(len(m["content"]) for m in chunk) <= max_chars
        rest = pending[len(chunk) :]
        if rest and any(b["ts"] - a["ts"] >= HOUR for a, b in pairwise(chunk)):
            # cut for size while holding a sitting's end: cut at a sitting's end
            assert rest[0]["ts"] - chunk[-1]["ts"] >= HOUR
        chunks.append(chunk)
        pending = rest
    assert [m["id"] for chunk in chunks for m in chunk] == list(range(1, len(times) + 1))


async def test_load_chunk_reads_the_users_unarchived_messages(
    deps: Deps, make_messages, runtime_for
):
    stored = deps.store.messages.add(1, make_messages(["a", "b", "c", "d", "e"]))
    deps.store.messages.add(2, make_messages(["other user"]))
    deps.store.topics.save(1, [("Done already", [stored[0]["id"]])])
    load_chunk = make_load_chunk(deps)

    update = await load_chunk({}, runtime_for(1, max_chunk_size=3, archive_all=True))

    assert [m["id"] for m in update["chunk"]] == [m["id"] for m in stored[1:4]]
    assert update["drafts"] == [] and update["merges"] == [] and update["split_fallback"] is None
    assert route_after_load(update) == "split"


async def test_load_chunk_leaves_a_fresh_conversation_alone(deps: Deps, make_messages, runtime_for):
    stored = deps.store.messages.add(1, make_messages(["a", "b"]))
    load_chunk = make_load_chunk(deps)
    last_ts = stored[-1]["ts"]

    fresh = await load_chunk({}, runtime_for(1, now_ts=last_ts + 60))
    stale = await load_chunk({}, runtime_for(1, now_ts=last_ts + HOUR))

    assert fresh["chunk"] == []
    assert route_after_load(fresh) == "__end__"
    assert [m["id"] for m in stale["chunk"]] == [m["id"] for m in stored]


def test_finished_sittings_wait_for_the_batch_or_the_longest_wait():
    """`archive_batch_messages`: two finished sittings of two messages, a batch of five."""
    messages = rows([0, 60, 2 * HOUR, 2 * HOUR + 60])
    waiting = {"archive_all": False, "now_ts": 4 * HOUR}
    assert chunk_ids(messages, **waiting) == [1, 2, 3, 4]
    assert chunk_ids(messages, **waiting, batch_messages=4) == [1, 2, 3, 4]
    assert chunk_ids(messages, **waiting, batch_messages=5) == []
    assert chunk_ids(messages, **waiting, batch_messages=5, max_wait_s=4 * HOUR) == [1, 2, 3, 4]
    assert chunk_ids(messages, **waiting, batch_messages=5, max_wait_s=4 * HOUR + 1) == []
    assert chunk_ids(messages, archive_all=True, batch_messages=5) == [1, 2, 3, 4]


def test_the_sitting_going_on_does_not_count_towards_the_batch():
    messages = rows([0, 60, 2 * HOUR, 2 * HOUR + 60])
    assert chunk_ids(messages, archive_all=False, now_ts=2 * HOUR + 70) == [1, 2]
    assert chunk_ids(messages, archive_all=False, now_ts=2 * HOUR + 70, batch_messages=3) == []


def test_a_full_chunk_is_archived_below_the_batch():
    """A batch larger than a chunk can hold never makes a full chunk wait."""
    messages = rows([0, 60, 2 * HOUR, 2 * HOUR + 60, 2 * HOUR + 120])
    full = {"archive_all": False, "now_ts": 130.0, "batch_messages": 10, "max_messages": 3}
    assert chunk_ids(messages, **full) == [1, 2]
    assert chunk_ids(messages, **(full | {"max_messages": 400})) == []


def test_a_conversation_the_user_has_left_waits_for_no_batch():
    """After `/new` (the current segment is 1) the old conversation's finished sitting is
    out of auto-RAG's reach, so it is archived at once."""
    messages = rows([0, 60])
    waiting = {"archive_all": False, "now_ts": 2 * HOUR, "batch_messages": 5}
    assert chunk_ids(messages, **waiting, segment=0) == []
    assert chunk_ids(messages, **waiting, segment=1) == [1, 2]
