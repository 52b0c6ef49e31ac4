"""Context budgets alone (seeds 002-004): when the rolling summary is refreshed, the
extractive summary, the sliding window's cut and token truncation. Assembling the
context on a real store: tests/integration/test_response_context.py."""

from __future__ import annotations

from nodes.response.assemble import window_turns
from nodes.response.session_summary import extractive_summary, needs_refresh
from nodes.shared.budget import tokens, truncate_to_tokens
from tests.support.messages import BASE_TIME, new_messages


def test_summary_refresh_rule():
    older = [{"seq": seq} for seq in range(3, 11)]
    stored = {"first_seq": 3, "last_seq": 8}
    assert needs_refresh(None, older, 5)
    assert not needs_refresh(stored, older, 5)
    assert needs_refresh(stored, older, 2)
    assert needs_refresh({"first_seq": 1, "last_seq": 10}, older, 5)  # archiving moved it


def test_extractive_summary_keeps_the_newest_user_messages_within_the_limit():
    messages = new_messages([f"user message number {i} " + "x" * 40 for i in range(10)])
    summary = extractive_summary(messages, max_chars=250)
    lines = summary.splitlines()
    assert 1 <= len(lines) < 5 and len(summary) <= 250
    assert "user message number 8" in lines[-1]
    assert all("number 1 " not in line for line in lines)
    assert lines[-1].startswith(f"- [{BASE_TIME:%Y-%m-%d} 09:08]")


def test_window_turns_drop_the_oldest_to_fit():
    messages = new_messages(["a" * 400, "b" * 400, "c" * 40])
    turns = window_turns(messages, budget=150)
    assert [t.text[0] for t in turns] == ["b", "c"]
    assert window_turns(messages, budget=0) == []


def test_truncate_to_tokens():
    text = "word " * 500
    cut = truncate_to_tokens(text, 100)
    assert tokens(cut) <= 100 and cut.endswith("…")
    assert truncate_to_tokens("short", 100) == "short"
