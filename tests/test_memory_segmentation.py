"""Segmentation without an LLM: synthetic embeddings for the mechanics, then the bundled
example session against its true subject blocks (boundary precision and recall)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.records import MessageRow
from nodes.memory.segmentation import SegmentationParams, segment_conversation

# The first test to ask for `demo_archive` pays for ingesting the session twice per user.
pytestmark = pytest.mark.timeout(300)

PARAMS = SegmentationParams()
START_TS = 1_772_442_000.0


def conversation(
    count: int, *, pauses: Sequence[int] = (), roles: Sequence[str] | None = None
) -> list[MessageRow]:
    """`count` messages a minute apart; a 40-minute pause before each index in `pauses`."""
    messages, ts = [], START_TS
    for index in range(count):
        if index:
            ts += 60 + (40 * 60 if index in pauses else 0)
        role = roles[index] if roles else ("user" if index % 2 == 0 else "assistant")
        messages.append(
            MessageRow(
                id=100 + index,
                user_id=1,
                seq=index + 1,
                external_id=f"m{index}",
                role=role,
                author=None,
                content=f"{role} message {index} about something worth saying",
                created_at="2026-03-02T09:00:00+00:00",
                ts=ts,
                topic_id=None,
                segment=0,
            )
        )
    return messages


def basis(dimension: int, index: int) -> np.ndarray:
    vector = np.zeros(dimension, dtype=np.float32)
    vector[index] = 1.0
    return vector


def starts(messages: Sequence[MessageRow], vectors: np.ndarray) -> list[int]:
    """Indexes where the proposed topics start."""
    index_of = {message["id"]: index for index, message in enumerate(messages)}
    return [index_of[p["start_msg_id"]] for p in segment_conversation(messages, vectors)]


def test_a_change_of_meaning_within_one_sitting_is_a_boundary():
    vectors = np.array([basis(8, 0)] * 8 + [basis(8, 1)] * 8)
    assert starts(conversation(16), vectors) == [0, 8]


def test_one_subject_stays_one_topic():
    rng = np.random.default_rng(7)
    vectors = basis(8, 0) + 0.05 * rng.standard_normal((16, 8)).astype(np.float32)
    assert starts(conversation(16), vectors) == [0]


def test_a_long_pause_is_a_boundary_even_without_a_change_of_meaning():
    vectors = np.array([basis(8, 0)] * 12)
    assert starts(conversation(12, pauses=[6]), vectors) == [0, 6]


def test_boundaries_fall_before_user_messages_only():
    # The meaning changes at an assistant message (index 7).
    vectors = np.array([basis(8, 0)] * 7 + [basis(8, 1)] * 9)
    messages = conversation(16)
    found = starts(messages, vectors)
    assert len(found) == 2
    assert messages[found[1]]["role"] == "user"


def test_a_short_digression_is_folded_into_a_neighbour():
    vectors = np.array([basis(8, 0)] * 8 + [basis(8, 1)] * 2 + [basis(8, 2)] * 8)
    found = starts(conversation(18), vectors)
    lengths = np.diff([*found, 18])
    assert min(lengths) >= PARAMS.min_messages


def test_summaries_quote_the_users_own_words():
    messages = conversation(8)
    messages[0]["content"] = "Помоги выбрать подарок маме на юбилей, ей исполняется шестьдесят"
    messages[2]["content"] = "Может, планшет с крупным шрифтом и фотографиями внуков?"
    vectors = np.array([basis(8, 0)] * 8)

    [proposal] = segment_conversation(messages, vectors)

    pieces = proposal["summary"].split(" … ")
    assert pieces[0].startswith("Помоги выбрать подарок маме")
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert all(any(" ".join(u.split()).startswith(p.rstrip("…")) for u in users) for p in pieces)
    assert len(proposal["summary"]) <= PARAMS.summary_chars + 3


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    count=st.integers(min_value=1, max_value=40),
)
def test_segments_cover_the_conversation_in_order(data, count):
    vectors = data.draw(
        arrays(np.float32, (count, 6), elements=st.floats(-1, 1, width=32)), label="vectors"
    )
    pauses = data.draw(st.sets(st.integers(1, max(1, count - 1))), label="pauses")
    roles = data.draw(
        st.lists(st.sampled_from(["user", "assistant"]), min_size=count, max_size=count)
    )
    messages = conversation(count, pauses=pauses, roles=roles)

    proposals = segment_conversation(messages, vectors)

    ids = [m["id"] for m in messages]
    spans = [(ids.index(p["start_msg_id"]), ids.index(p["end_msg_id"])) for p in proposals]
    assert spans[0][0] == 0 and spans[-1][1] == count - 1
    assert all(end + 1 == nxt for (_, end), (nxt, _) in pairwise(spans))
    assert all(p["summary"].strip() for p in proposals)
    for start, end in spans:
        short = end - start + 1 < PARAMS.min_messages
        walled = (start == 0 or start in pauses) and (end == count - 1 or end + 1 in pauses)
        assert not short or walled or len(spans) == 1, "a short segment must sit between pauses"


# -- the bundled example session -------------------------------------------------------


def boundary_scores(
    predicted: set[int], truth: set[int], tolerance: int = 0
) -> tuple[float, float]:
    """Precision and recall of boundary positions, a match within `tolerance` messages."""

    def near(position: int, others: set[int]) -> bool:
        return any(abs(position - other) <= tolerance for other in others)

    precision = sum(near(p, truth) for p in predicted) / len(predicted) if predicted else 0.0
    recall = sum(near(t, predicted) for t in truth) / len(truth)
    return precision, recall


def demo_segmentation(demo_archive) -> tuple[list[list[str]], set[int], set[int], list[str]]:
    """User 1's topics as external-id lists, predicted and true boundaries (positions > 0)."""
    store = demo_archive.deps.store
    topics = store.topics.all_of(1)
    members = store.messages.external_ids_by_topic(1, [topic["id"] for topic in topics])
    order = demo_archive.external_ids
    position = {external_id: index for index, external_id in enumerate(order)}
    topic_lists = [members[topic["id"]] for topic in topics]
    predicted = {position[ids[0]] for ids in topic_lists} - {0}
    subject = demo_archive.subject_of
    truth = {i for i in range(1, len(order)) if subject[order[i]] != subject[order[i - 1]]}
    return topic_lists, predicted, truth, order


def test_demo_every_message_is_in_exactly_one_topic(demo_archive):
    topic_lists, _, _, order = demo_segmentation(demo_archive)
    flat = [external_id for ids in topic_lists for external_id in ids]
    assert sorted(flat) == sorted(order)
    assert len(flat) == len(set(flat)) == 196


def test_demo_no_topic_straddles_two_subjects_beyond_a_small_tolerance(demo_archive):
    topic_lists, _, _, _ = demo_segmentation(demo_archive)
    subject = demo_archive.subject_of
    strays = []
    for ids in topic_lists:
        blocks = Counter(subject[external_id] for external_id in ids)
        strays.append(len(ids) - blocks.most_common(1)[0][1])
    print(f"\nmessages outside their topic's main subject, per topic: {strays}")
    assert max(strays) <= 2
    assert sum(strays) <= 4


def test_demo_boundaries_match_the_true_subject_blocks(demo_archive):
    _, predicted, truth, _ = demo_segmentation(demo_archive)
    precision, recall = boundary_scores(predicted, truth)
    near_precision, near_recall = boundary_scores(predicted, truth, tolerance=2)
    times = [m["ts"] for m in demo_archive.deps.store.messages.all_of(1)]
    same_sitting = {i for i in truth if times[i] - times[i - 1] < PARAMS.pause_s}
    _, sitting_recall = boundary_scores(predicted, same_sitting)
    print(
        f"\nboundaries: {len(predicted)} predicted, {len(truth)} true "
        f"({len(same_sitting)} within a sitting); exact precision {precision:.3f} "
        f"recall {recall:.3f}; within 2 messages precision {near_precision:.3f} "
        f"recall {near_recall:.3f}; recall within a sitting {sitting_recall:.3f}"
    )
    # Floors just under what the segmentation measures today (0.833 / 0.882 exact,
    # 0.944 / 1.0 within two messages, 0.778 within a sitting): one lost boundary fails.
    assert precision >= 0.80
    assert recall >= 0.85
    assert near_precision >= 0.90
    assert near_recall == 1.0
    assert sitting_recall >= 0.75


def test_demo_summaries_quote_the_topics_own_user_messages(demo_archive):
    """Extractive summaries: in the conversation's language, never invented."""
    store = demo_archive.deps.store
    for topic in store.topics.all_of(1):
        users = [
            " ".join(m["content"].split())
            for m in store.messages.of_topic(1, topic["id"])
            if m["role"] == "user"
        ]
        for piece in topic["summary"].split(" … "):
            assert any(text.startswith(piece.rstrip("…")) for text in users), (piece, topic)
