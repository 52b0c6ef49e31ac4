"""Saved sessions (JSONL) as the tests write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def session_line(**fields: Any) -> str:
    """One line of a saved session: the fields as a JSON object, non-ASCII kept as is."""
    return json.dumps(fields, ensure_ascii=False)


GOOD_SESSION = [
    session_line(
        id="a1",
        role="user",
        content="Привет! Planning a trip",
        created_at="2026-03-02T09:00:00+01:00",
        author="Alexei",
    ),
    session_line(
        id="a2", role="assistant", content="Where to?", created_at="2026-03-02T09:01:00+01:00"
    ),
    session_line(role="user", content="Valencia", created_at="2026-03-02T09:02:00"),
]
"""Three valid lines: with an author, without one, and without an id."""


def write_session(folder: Path, lines: list[str]) -> Path:
    """`lines` written to `folder/session.jsonl`, one a line."""
    path = folder / "session.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
