"""Validate coverage: whatever the splitter proposes, every chunk message ends in exactly one
topic. Edge cases of seed 000 one by one, then a property test over arbitrary proposals."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from core.records import MessageRow
from core.state import TopicDraft, TopicProposal
from nodes.memory.coverage import GENERAL_SUMMARY, make_validate, validate_coverage
from tests.support.messages import message_row

BIG = 25_000


def chunk(ids: Sequence[int], contents: Sequence[str] | None = None) -> list[MessageRow]:
    contents = contents or [f"message number {i}" for i in ids]
    return [
        message_row(message_id, position, content, ts=1_772_442_000.0 + 60 * position)
        for position, (message_id, content) in enumerate(zip(ids, contents, strict=True))
    ]


def proposal(summary: str, start, end) -> TopicProposal:
    return TopicProposal(summary=summary, start_msg_id=start, end_msg_id=end)


def layout(drafts: list[TopicDraft]) -> list[tuple[str, list[int]]]:
    return [(draft["summary"], draft["message_ids"]) for draft in drafts]


def test_proposals_that_cover_the_chunk_are_kept_as_they_are():
    drafts, report = validate_coverage(
        chunk([1, 2, 3, 4]), [proposal("Knee", 1, 2), proposal("Postgres", 3, 4)], BIG
    )
    assert layout(drafts) == [("Knee", [1, 2]), ("Postgres", [3, 4])]
    assert report == {
        "clamped": 0,
        "overlaps_resolved": 0,
        "uncovered": [],
        "oversized_split": 0,
        "time_gap_split": 0,
        "empty_summaries": 0,
        "unknown_ids": 0,
    }


def test_a_gap_becomes_a_general_conversation_topic_quoting_the_user():
    messages = chunk([1, 2, 3, 4, 5, 6], ["a", "b", "Как дела с котом?", "Лучше", "e", "f"])
    drafts, report = validate_coverage(messages, [proposal("A", 1, 2), proposal("B", 5, 6)], BIG)

    assert [ids for _, ids in layout(drafts)] == [[1, 2], [3, 4], [5, 6]]
    assert drafts[1]["summary"] == f"{GENERAL_SUMMARY}: Как дела с котом?"
    assert report["uncovered"] == [3, 4]


def test_no_proposals_at_all_make_one_general_topic():
    drafts, report = validate_coverage(chunk([7, 8, 9]), [], BIG)
    assert [ids for _, ids in layout(drafts)] == [[7, 8, 9]]
    assert drafts[0]["summary"].startswith(GENERAL_SUMMARY)
    assert report["uncovered"] == [7, 8, 9]


def test_overlaps_go_to_the_earlier_topic_whatever_the_proposal_order():
    messages = chunk([1, 2, 3, 4, 5, 6])
    for proposals in (
        [proposal("A", 1, 4), proposal("B", 3, 6)],
        [proposal("B", 3, 6), proposal("A", 1, 4)],
    ):
        drafts, report = validate_coverage(messages, proposals, BIG)
        assert layout(drafts) == [("A", [1, 2, 3, 4]), ("B", [5, 6])]
        assert report["overlaps_resolved"] == 1


def test_a_topic_inside_another_is_dropped():
    drafts, report = validate_coverage(
        chunk([1, 2, 3, 4]), [proposal("Outer", 1, 4), proposal("Inner", 2, 3)], BIG
    )
    assert layout(drafts) == [("Outer", [1, 2, 3, 4])]
    assert report["overlaps_resolved"] == 1


def test_out_of_range_ids_are_clamped_or_counted_unknown():
    messages = chunk([11, 12, 13, 14, 15, 16])
    drafts, report = validate_coverage(
        messages,
        [proposal("Before", 5, 12), proposal("After", 15, 99), proposal("Elsewhere", 100, 200)],
        BIG,
    )
    assert [(summary[:7], ids) for summary, ids in layout(drafts)] == [
        ("Before", [11, 12]),
        ("General", [13, 14]),
        ("After", [15, 16]),
    ]
    assert report["clamped"] == 2
    assert report["unknown_ids"] == 1


def test_a_range_falling_between_the_chunks_ids_is_unknown():
    # Ids are global across users, so one user's chunk can have holes.
    drafts, report = validate_coverage(chunk([1, 2, 5, 6]), [proposal("Hole", 3, 4)], BIG)
    assert [ids for _, ids in layout(drafts)] == [[1, 2, 5, 6]]
    assert report["unknown_ids"] == 1


def test_reversed_ranges_are_turned_around():
    drafts, report = validate_coverage(
        chunk([1, 2, 3, 4]), [proposal("Backwards", 3, 1), proposal("Rest", 4, 4)], BIG
    )
    assert layout(drafts) == [("Backwards", [1, 2, 3]), ("Rest", [4])]
    assert report["clamped"] == 1


def test_ids_that_are_not_numbers_are_unknown():
    drafts, report = validate_coverage(
        chunk([1, 2]), [proposal("Bad", "first", 2), {"summary": "No ids"}], BIG
    )
    assert [ids for _, ids in layout(drafts)] == [[1, 2]]
    assert report["unknown_ids"] == 2


def test_empty_summaries_are_rejected_and_their_messages_kept():
    drafts, report = validate_coverage(
        chunk([1, 2, 3, 4]),
        [proposal("", 1, 2), proposal("   \n", 3, 3), proposal("  Spaced   out  ", 4, 4)],
        BIG,
    )
    assert [ids for _, ids in layout(drafts)] == [[1, 2, 3], [4]]
    assert drafts[0]["summary"].startswith(GENERAL_SUMMARY)
    assert drafts[1]["summary"] == "Spaced out"
    assert report["empty_summaries"] == 2
    assert report["uncovered"] == [1, 2, 3]


def test_oversized_topics_are_split_at_message_boundaries():
    messages = chunk([1, 2, 3, 4, 5], ["x" * 10] * 5)
    drafts, report = validate_coverage(messages, [proposal("Long", 1, 5)], max_chars=25)

    assert layout(drafts) == [
        ("Long (part 1/3)", [1, 2]),
        ("Long (part 2/3)", [3, 4]),
        ("Long (part 3/3)", [5]),
    ]
    assert report["oversized_split"] == 1


def test_an_empty_chunk_has_no_drafts():
    drafts, report = validate_coverage([], [proposal("A", 1, 2)], BIG)
    assert drafts == []
    assert report["uncovered"] == []


async def test_the_validate_node_uses_the_runs_size_threshold(runtime_for):
    state = {"chunk": chunk([1, 2, 3], ["x" * 10] * 3), "proposals": [proposal("All", 1, 3)]}
    update = await make_validate()(state, runtime_for(1, split_threshold_chars=20))

    assert [draft["message_ids"] for draft in update["drafts"]] == [[1, 2], [3]]
    assert update["coverage"]["oversized_split"] == 1


@st.composite
def chunks_and_proposals(draw):
    ids = sorted(draw(st.sets(st.integers(min_value=1, max_value=300), min_size=1, max_size=40)))
    lengths = draw(st.lists(st.integers(0, 60), min_size=len(ids), max_size=len(ids)))
    anywhere = st.integers(min_value=ids[0] - 20, max_value=ids[-1] + 20)
    proposals = draw(
        st.lists(
            st.builds(
                proposal,
                st.one_of(st.just(""), st.just("  "), st.text(min_size=1, max_size=12)),
                st.one_of(anywhere, st.sampled_from(ids)),
                st.one_of(anywhere, st.sampled_from(ids)),
            ),
            max_size=12,
        )
    )
    max_chars = draw(st.integers(min_value=1, max_value=400))
    return chunk(ids, ["y" * n for n in lengths]), proposals, max_chars


@settings(max_examples=300, deadline=None)
@given(chunks_and_proposals())
def test_no_message_is_ever_lost_or_doubled(case):
    messages, proposals, max_chars = case
    ids = [message["id"] for message in messages]
    size = {message["id"]: len(message["content"]) for message in messages}

    drafts, report = validate_coverage(messages, proposals, max_chars)

    covered = [message_id for draft in drafts for message_id in draft["message_ids"]]
    assert covered == ids  # each chunk id exactly once, nothing else, in order
    for draft in drafts:
        assert draft["message_ids"], "no empty topic"
        assert draft["summary"].strip(), "no empty summary"
        first = ids.index(draft["message_ids"][0])
        assert draft["message_ids"] == ids[first : first + len(draft["message_ids"])]
        members = draft["message_ids"]
        assert len(members) == 1 or sum(size[i] for i in members) <= max_chars
    assert set(report["uncovered"]) <= set(ids)
