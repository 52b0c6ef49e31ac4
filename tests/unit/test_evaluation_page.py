"""docs/evaluation.md shows what is true now, from one run each: its tables, a short table
of what was tried and not kept, and no measurement log (no commit hashes but the runs'
own)."""

from __future__ import annotations

import re

from tests.support.paths import ROOT

PAGE = ROOT / "docs" / "evaluation.md"
SECTIONS = (
    "## BEAM dev",
    "## LoCoMo dev",
    "## Leave one conversation out",
    "## Transfer",
    "## Tried and not kept",
    "## Not reached yet",
)


def section(text: str, heading: str) -> str:
    """The text under `heading`, up to the next section."""
    after = text.split(f"\n{heading}\n", 1)[1]
    return after.split("\n## ", 1)[0]


def test_the_evaluation_page_is_short_and_holds_its_sections() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    for heading in SECTIONS:
        assert f"\n{heading}\n" in text, heading


def test_what_was_tried_is_a_short_table() -> None:
    tried = section(PAGE.read_text(encoding="utf-8"), "## Tried and not kept")
    rows = [line for line in tried.splitlines() if line.startswith("|")]
    assert 0 < len(rows) - 2 <= 30  # less the header and its delimiter row


def test_no_commit_hash_but_those_naming_the_runs() -> None:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    with_hash = [line for line in lines if re.search(r"`[0-9a-f]{7,40}`", line)]
    assert with_hash
    for line in with_hash:  # each names the commit a run was of, and only that one
        assert re.search(r"\brun\b.* of commit `[0-9a-f]{7,40}`", line), line
        assert len(re.findall(r"`[0-9a-f]{7,40}`", line)) == 1, line
