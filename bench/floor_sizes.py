"""The relevance floor by memory size: how the vector floors grow with the memory.

The best cosine an unrelated question reaches over n records grows with n (the maximum of
more draws), so a floor calibrated on memories of hundreds of messages turns away real
questions in small ones. Here each LoCoMo memory is cut into windows of 2 to 256
consecutive messages (a small memory is a short stretch of conversation), and for each
size the 95th percentile of the unrelated questions' best message cosine is taken; the
topic floor likewise, over the topics a window touches, by their count. Each is fitted
as `base + per_log · ln n` (`nodes.response.ranking.floors.SizeCurve`), capped by the floor
of the full memories.

Checked leave-one-conversation-out: curves fitted on four memories, measured on windows of
the fifth: the share of unrelated questions answered "nothing" and of LoCoMo questions
(a window centred on their first evidence message) turned away, with the fixed floors
and with the curves. Vector signals only: full-text scores need an index per window, and
in small memories BM25's idf is small, so its floors rarely open the gate there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nodes.response.ranking.floors import NULL_QUANTILE, SizeCurve

SIZES = (2, 4, 8, 16, 32, 64, 128, 256)
WINDOWS = 24
"""Windows per size and memory, evenly spaced over the conversation."""
MIN_SCORES = 200
"""Topic counts with fewer (question, window) scores than this are not fitted."""


@dataclass
class MemoryCosines:
    """One memory's cosines: rows are questions, columns its messages (in order) or
    topics; `spans` holds each topic's message positions."""

    sample_id: str
    unrelated_messages: np.ndarray
    unrelated_topics: np.ndarray
    memory_messages: np.ndarray
    memory_topics: np.ndarray
    spans: list[list[int]]
    evidence: list[int]
    """Per LoCoMo question, the position of its first evidence message."""

    @classmethod
    def of(
        cls,
        sample_id: str,
        messages: np.ndarray,
        topics: np.ndarray,
        spans: list[list[int]],
        unrelated: np.ndarray,
        questions: np.ndarray,
        evidence: list[int],
    ) -> MemoryCosines:
        m, t = unit(messages), unit(topics)
        u, q = unit(unrelated), unit(questions)
        return cls(sample_id, u @ m.T, u @ t.T, q @ m.T, q @ t.T, spans, evidence)

    @property
    def size(self) -> int:
        return self.unrelated_messages.shape[1]

    def windows(self, size: int) -> list[tuple[int, int]]:
        if size >= self.size:
            return [(0, self.size)]
        starts = np.linspace(0, self.size - size, WINDOWS).astype(int)
        return [(int(start), int(start) + size) for start in sorted(set(starts))]

    def topics_in(self, start: int, end: int) -> list[int]:
        return [i for i, span in enumerate(self.spans) if any(start <= p < end for p in span)]


def best_of(cosines: np.ndarray, columns: list[int] | slice) -> np.ndarray:
    """Each row's best cosine among `columns` (minus infinity where there are none)."""
    chosen = cosines[:, columns]
    if chosen.shape[1] == 0:
        return np.full(cosines.shape[0], -np.inf)
    return chosen.max(axis=1)


def unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def fit_curves(memories: Sequence[MemoryCosines]) -> dict[str, SizeCurve]:
    """The message and topic curves of these memories' unrelated questions."""
    quantile = NULL_QUANTILE * 100
    logs, message_floors = [], []
    by_topics: defaultdict[int, list[np.ndarray]] = defaultdict(list)
    for size in SIZES:
        best = []
        for memory in memories:
            for start, end in memory.windows(size):
                best.append(best_of(memory.unrelated_messages, slice(start, end)))
                topics = memory.topics_in(start, end)
                by_topics[len(topics)].append(best_of(memory.unrelated_topics, topics))
        logs.append(np.log(size))
        message_floors.append(np.percentile(np.concatenate(best), quantile))
    topic_logs, topic_floors = [], []
    for count, scores in sorted(by_topics.items()):
        values = np.concatenate(scores)
        if count > 0 and len(values) >= MIN_SCORES:
            topic_logs.append(np.log(count))
            topic_floors.append(np.percentile(values, quantile))
    full_messages = np.concatenate([m.unrelated_messages.max(axis=1) for m in memories])
    full_topics = np.concatenate([m.unrelated_topics.max(axis=1) for m in memories])
    message_slope, message_base = np.polyfit(logs, message_floors, 1)
    topic_slope, topic_base = np.polyfit(topic_logs, topic_floors, 1)
    return {
        "messages": SizeCurve(
            float(message_base), float(message_slope), float(np.percentile(full_messages, quantile))
        ),
        "topics": SizeCurve(
            float(topic_base), float(topic_slope), float(np.percentile(full_topics, quantile))
        ),
    }


def fixed(curves: dict[str, SizeCurve]) -> dict[str, SizeCurve]:
    """The same caps as floors whatever the size (the floors before the curves)."""
    return {name: SizeCurve(curve.cap, 0.0, curve.cap) for name, curve in curves.items()}


def measure(memory: MemoryCosines, size: int, curves: dict[str, SizeCurve]) -> tuple[float, float]:
    """On windows of `size` messages of `memory`: the share of unrelated questions with no
    vector signal over its floor ("nothing"), and of LoCoMo questions turned away."""
    nothing = []
    for start, end in memory.windows(size):
        topics = memory.topics_in(start, end)
        message_floor = curves["messages"].at(end - start)
        topic_floor = curves["topics"].at(len(topics))
        nothing.extend(
            (best_of(memory.unrelated_messages, slice(start, end)) < message_floor)
            & (best_of(memory.unrelated_topics, topics) < topic_floor)
        )
    away = []
    for row, position in enumerate(memory.evidence):
        start = max(0, min(position - size // 2, memory.size - size))
        end = min(memory.size, start + size)
        topics = memory.topics_in(start, end)
        away.append(
            best_of(memory.memory_messages[row : row + 1], slice(start, end))[0]
            < curves["messages"].at(end - start)
            and best_of(memory.memory_topics[row : row + 1], topics)[0]
            < curves["topics"].at(len(topics))
        )
    return float(np.mean(nothing)), float(np.mean(away)) if away else 0.0


def by_size(memories: Sequence[MemoryCosines]) -> dict[str, Any]:
    """The curves fitted on every memory, and their leave-one-conversation-out check."""
    folds = {
        held.sample_id: fit_curves([m for m in memories if m is not held]) for held in memories
    }
    rows = []
    for size in (*SIZES, None):
        row: dict[str, Any] = {"messages": size or "whole memory"}
        for label, choose in (("fixed", fixed), ("by_size", lambda curves: curves)):
            figures = [
                measure(held, size or held.size, choose(folds[held.sample_id])) for held in memories
            ]
            row[f"{label}_nothing"] = float(np.mean([nothing for nothing, _ in figures]))
            row[f"{label}_turned_away"] = float(np.mean([away for _, away in figures]))
        rows.append(row)
    return {
        "curves": {name: curve.__dict__ for name, curve in fit_curves(memories).items()},
        "leave_one_out": rows,
    }


def show_by_size(result: dict[str, Any], out) -> None:
    for name, curve in result["curves"].items():
        out.print(
            f"  {name} vector floor by size: min({curve['cap']:.3f}, "
            f"{curve['base']:.3f} + {curve['per_log']:.4f} · ln n)"
        )
    out.print(
        "Leave one conversation out, vector signals only, windows of n messages "
        "(unrelated answered 'nothing' / LoCoMo questions turned away):"
    )
    out.print("  n | fixed floors | floors by size")
    for row in result["leave_one_out"]:
        out.print(
            f"  {row['messages']} | {row['fixed_nothing']:.1%} / {row['fixed_turned_away']:.1%}"
            f" | {row['by_size_nothing']:.1%} / {row['by_size_turned_away']:.1%}"
        )
