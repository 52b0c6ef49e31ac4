"""Segmentation of the bundled example session, archived without an LLM (`demo_archive`),
against its true subject blocks: boundary precision and recall, coverage, summaries."""

from __future__ import annotations

from collections import Counter

import pytest

from nodes.memory.segmentation import SegmentationParams

# The first test to ask for `demo_archive` pays for ingesting the session twice per user.
pytestmark = pytest.mark.timeout(300)

PARAMS = SegmentationParams()


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
