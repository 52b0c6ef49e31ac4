"""What a search hands on (`core.state.Found`), written by hand for the tests that give a
node or a graph what the search would have found."""

from __future__ import annotations

from typing import Any

from core.found import NOTHING_FOUND, Found


def found(**parts: Any) -> Found:
    """`NOTHING_FOUND` with `parts` (queries, topics, people, facts, evidence) in place."""
    return Found(**{**NOTHING_FOUND, **parts})
