"""Real `topica` processes on one data directory, and what they left in it.

Shared by the concurrency tests and the kill -9 soak benchmark: start `topica ingest`
as a process, read back each stored message's topic, check the store's invariants.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT
from tests.support.processes import environment_without


def topica_process(*args: str, **popen: object) -> subprocess.Popen[str]:
    """`python -m cli.main ARGS` as a process, with no Topica configuration from the
    environment; stdout and stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        env=environment_without("TOPICA_", "LANGSMITH_", "LANGCHAIN_"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,  # type: ignore[arg-type]
    )


def membership(data_dir: Path, user_id: int = 1) -> tuple[list[tuple[str, ...]], int]:
    """(each topic's member external ids, sorted; the user's message count), checking
    on the way that every message is archived into a topic that exists, and that each
    topic's message count is its members'."""
    with sqlite3.connect(data_dir / "topica.sqlite3") as db:
        messages = db.execute(
            "SELECT external_id, topic_id FROM messages WHERE user_id = ? ORDER BY seq",
            (user_id,),
        ).fetchall()
        counts = dict(
            db.execute("SELECT id, message_count FROM topics WHERE user_id = ?", (user_id,))
        )
    by_topic: dict[int, list[str]] = {}
    for external_id, topic_id in messages:
        assert topic_id in counts, f"{external_id} is in no stored topic ({topic_id})"
        by_topic.setdefault(topic_id, []).append(external_id)
    assert set(by_topic) == set(counts), "a topic without messages"
    assert {t: len(ids) for t, ids in by_topic.items()} == counts, "message counts differ"
    return sorted(tuple(ids) for ids in by_topic.values()), len(messages)


def stored_count(data_dir: Path, user_id: int = 1) -> int:
    """The user's messages stored so far; 0 before the schema exists."""
    try:
        with sqlite3.connect(f"file:{data_dir / 'topica.sqlite3'}?mode=ro", uri=True) as db:
            query = "SELECT COUNT(*) FROM messages WHERE user_id = ?"
            return db.execute(query, (user_id,)).fetchone()[0]
    except sqlite3.OperationalError:  # no file yet, no table yet
        return 0
