"""The similarity rule's summary of two merged topics (merging itself:
tests/integration/test_memory_merging.py)."""

from __future__ import annotations

from nodes.memory.merging import combined_summary


def test_the_rules_summary_does_not_repeat_itself():
    assert combined_summary("Cat diet", "cat diet") == "Cat diet"
    assert combined_summary("Cat", "Cat diet and water") == "Cat diet and water"
    assert combined_summary("Cat diet", "Postgres") == "Cat diet · Postgres"
    assert len(combined_summary("a " * 300, "b " * 300)) <= 400
