"""Where the repository and the data files the tests read lie, wherever a test module sits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the working directory of every subprocess a test starts."""

EXAMPLES = ROOT / "graphs" / "examples"
DEMO_SESSION = EXAMPLES / "demo_session.jsonl"
DEMO_SUBJECTS = EXAMPLES / "demo_subjects.json"
DEMO_QUESTIONS = EXAMPLES / "demo_questions.json"
THREE_SITTINGS = ROOT / "tests" / "data" / "three_sittings.jsonl"
"""A 60-message session in three sittings (a cat at the vet among them)."""
