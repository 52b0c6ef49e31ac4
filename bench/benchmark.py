"""What differs between the benchmarks the harness runs (`eval locomo`, `eval beam`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.locomo import Conversation, Question


def never(question: Question) -> bool:
    return False


@dataclass(frozen=True)
class Benchmark:
    """What differs between benchmarks: how to read one, and how its questions count."""

    name: str
    load: Callable[[Path, set[str] | None], list[Conversation]]
    """Conversations of a data path (all, or those named); unknown names are left out."""
    categories: Mapping[str, str]
    """Category key (as the results write it) → its name."""
    answerable: Callable[[Question], bool]
    """Questions scored on their evidence."""
    abstains: Callable[[Question], bool] = never
    """Questions memory cannot answer, scored as whether a method recalled nothing."""
    grouping: str = "category"
    """What the categories are called in reports ("category", "question type")."""
