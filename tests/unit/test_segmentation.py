"""Segmentation without an LLM, on synthetic embeddings: the mechanics (the bundled example
session against its true subject blocks: tests/integration/test_segmentation_demo.py)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.records import MessageRow
from nodes.memory.segmentation import SegmentationParams, segment_conversation
from tests.support.messages import message_row

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
        content = f"{role} message {index} about something worth saying"
        messages.append(
            message_row(100 + index, index, content, ts, role=role, external_id=f"m{index}")
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
