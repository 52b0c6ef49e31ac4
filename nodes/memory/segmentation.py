"""The non-LLM splitter: topic boundaries from embeddings and time, extractive summaries.

A TextTiling-style pass over message embeddings: at each place where the user
speaks, compare the meaning of the few messages before with the few after; a
deep dip in similarity is a change of subject. A long pause is a boundary on
its own. Boundaries only fall before user messages, because topics follow the
user's requests. Summaries quote the user's own words, so they are in the
language the conversation was held in and never invent anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.records import MessageRow
from core.state import TopicProposal
from core.text import clip


@dataclass(frozen=True, kw_only=True)
class SegmentationParams:
    window: int = 4
    """Messages on each side of a candidate boundary."""
    pause_s: float = 30 * 60
    """A pause this long always starts a new topic."""
    min_messages: int = 6
    """Shorter segments are folded into the neighbour they resemble more."""
    depth_cutoff_sd: float = 0.5
    """A boundary needs a similarity dip deeper than mean + this many SDs of all dips."""
    max_similarity: float = 0.55
    """...and the two sides must be less similar than this."""
    summary_chars: int = 220


def segment_conversation(
    messages: Sequence[MessageRow],
    vectors: np.ndarray,
    params: SegmentationParams = SegmentationParams(),
) -> list[TopicProposal]:
    """Topic proposals covering `messages` (ordered) exactly once, in order."""
    if not messages:
        return []
    starts = _boundaries(messages, vectors, params)
    segments = [
        list(range(start, end))
        for start, end in zip(starts, [*starts[1:], len(messages)], strict=True)
    ]
    segments = _fold_short_segments(segments, vectors, messages, params)
    return [
        TopicProposal(
            summary=extractive_summary([messages[i] for i in segment], vectors[segment], params),
            start_msg_id=messages[segment[0]]["id"],
            end_msg_id=messages[segment[-1]]["id"],
        )
        for segment in segments
    ]


def _boundaries(
    messages: Sequence[MessageRow], vectors: np.ndarray, params: SegmentationParams
) -> list[int]:
    """Indexes where segments start (always including 0)."""
    count = len(messages)
    hard = {
        i for i in range(1, count) if messages[i]["ts"] - messages[i - 1]["ts"] >= params.pause_s
    }
    candidates = [i for i in range(1, count) if messages[i]["role"] == "user"] or list(
        range(1, count)
    )
    similarity = {}
    for i in candidates:
        left = vectors[max(0, i - params.window) : i].mean(axis=0)
        right = vectors[i : i + params.window].mean(axis=0)
        similarity[i] = float(_cosine(left, right))
    depth = _depths(candidates, similarity)
    chosen = set(hard)
    if depth:
        values = np.array(list(depth.values()))
        cutoff = values.mean() + params.depth_cutoff_sd * values.std()
        for i in candidates:
            if depth[i] > cutoff and similarity[i] < params.max_similarity:
                chosen.add(i)
    starts = sorted(chosen | {0})
    return _thin_out(starts, depth, hard, params.min_messages)


def _depths(candidates: list[int], similarity: dict[int, float]) -> dict[int, float]:
    """TextTiling depth: how far a point lies below the highest points on both sides."""
    depth = {}
    for position, i in enumerate(candidates):
        left_peak = max(similarity[j] for j in candidates[: position + 1])
        right_peak = max(similarity[j] for j in candidates[position:])
        depth[i] = (left_peak - similarity[i]) + (right_peak - similarity[i])
    return depth


def _thin_out(
    starts: list[int], depth: dict[int, float], hard: set[int], min_messages: int
) -> list[int]:
    """Among soft boundaries closer than `min_messages`, keep the deeper one."""
    kept: list[int] = []
    for start in starts:
        if kept and start - kept[-1] < min_messages and start not in hard:
            previous = kept[-1]
            if (
                previous != 0
                and previous not in hard
                and depth.get(start, 0) > depth.get(previous, 0)
            ):
                kept[-1] = start
            continue
        kept.append(start)
    return kept


def _fold_short_segments(
    segments: list[list[int]],
    vectors: np.ndarray,
    messages: Sequence[MessageRow],
    params: SegmentationParams,
) -> list[list[int]]:
    """Fold segments under `min_messages` into the more similar neighbour in the same sitting."""
    changed = True
    while changed and len(segments) > 1:
        changed = False
        for index, segment in enumerate(segments):
            if len(segment) >= params.min_messages:
                continue
            neighbours = []
            for other in (index - 1, index + 1):
                if 0 <= other < len(segments) and not _pause_between(
                    segments[min(index, other)], segments[max(index, other)], messages, params
                ):
                    score = _cosine(
                        vectors[segment].mean(axis=0), vectors[segments[other]].mean(axis=0)
                    )
                    neighbours.append((score, other))
            if not neighbours:
                continue
            _, other = max(neighbours)
            low, high = sorted((index, other))
            segments[low : high + 1] = [segments[low] + segments[high]]
            changed = True
            break
    return segments


def _pause_between(
    earlier: list[int], later: list[int], messages: Sequence[MessageRow], params: SegmentationParams
) -> bool:
    return messages[later[0]]["ts"] - messages[earlier[-1]]["ts"] >= params.pause_s


def extractive_summary(
    messages: Sequence[MessageRow], vectors: np.ndarray, params: SegmentationParams
) -> str:
    """The request that opened the topic and the user message most central to it."""
    user_positions = [i for i, message in enumerate(messages) if message["role"] == "user"]
    positions = user_positions or list(range(len(messages)))
    centroid = vectors.mean(axis=0)
    # The request that opened the subject, skipping short leftovers ("thanks!") of the last one.
    opener = next((i for i in positions if len(messages[i]["content"].split()) >= 5), positions[0])
    central = max(positions, key=lambda i: float(_cosine(vectors[i], centroid)))
    chosen = sorted({opener, central})
    budget = params.summary_chars // len(chosen)
    parts = [clip(messages[i]["content"], budget) for i in chosen]
    return " … ".join(part for part in parts if part) or clip(messages[0]["content"], budget) or "…"


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denominator if denominator else 0.0
