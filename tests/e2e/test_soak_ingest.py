"""Soak: `topica ingest` killed with SIGKILL at random moments, then run again.

Each trial starts a real `topica ingest` of a saved session (60 messages in three
sittings) for a user of its own, in one data directory that keeps every trial before
(so the store grows and users sit side by side), kills it
with SIGKILL after a random delay (0 to the length of a whole ingest, so the kill lands
anywhere: start-up, storing, indexing, any memory-graph step), and runs the same ingest
again to the end. After each trial: messages stored (all of the file, once), lost (none),
every message in exactly one existing topic, and the vector index against SQLite as
`topica doctor` sees it: orphan vectors and missing vectors (none). Printed as a table.

A benchmark: excluded from `make test`; run with
`.venv/bin/python -m pytest tests/e2e/test_soak_ingest.py -m benchmark -q -s`
(`TOPICA_SOAK_TRIALS`, default 20, sets the number of kills).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path

import pytest

from app.doctor import doctor
from core.ports import Embedder
from stores.saved_sessions import read_session
from tests.support.paths import THREE_SITTINGS
from tests.support.services import local_deps
from tests.support.soak import membership, stored_count, topica_process

TRIALS = int(os.environ.get("TOPICA_SOAK_TRIALS", "20"))

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(60 + TRIALS * 150)]


def start(data_dir: Path, user: int):
    return topica_process(
        "ingest", str(THREE_SITTINGS), "--data-dir", str(data_dir), "--user", str(user)
    )


def ingest(data_dir: Path, user: int = 1) -> tuple[int, str]:
    process = start(data_dir, user)
    _, errors = process.communicate(timeout=300)
    return process.returncode, errors


def test_kill_9_during_ingest_loses_nothing_and_leaves_no_orphan_vector(
    tmp_path: Path, embedder: Embedder
):
    expected = len(read_session(THREE_SITTINGS))
    started = time.monotonic()
    status, errors = ingest(tmp_path / "reference")
    whole_s = time.monotonic() - started
    assert status == 0, errors
    reference = membership(tmp_path / "reference")
    data_dir = tmp_path / "data"
    chance = random.Random(int(os.environ.get("TOPICA_SOAK_SEED", "13")))
    rows = []
    for trial in range(1, TRIALS + 1):
        delay = chance.uniform(0.0, whole_s)
        process = start(data_dir, trial)
        time.sleep(delay)
        killed = process.poll() is None
        if killed:
            process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
        at_kill = stored_count(data_dir, trial)
        status, errors = ingest(data_dir, trial)
        assert status == 0, errors
        topics, count = membership(data_dir, trial)
        deps = local_deps(data_dir, embedder)
        try:
            report = asyncio.run(doctor(deps, [trial]))["reports"]
        finally:
            deps.close()
        rows.append(
            {
                "trial": trial,
                "kill_s": round(delay, 1),
                "killed": killed,
                "stored_at_kill": at_kill,
                "stored": count,
                "lost": expected - count,
                "topics": len(topics),
                "same_topics": topics == reference[0],
                "orphans": sum(len(r["orphans"]) for r in report),
                "missing": sum(len(r["missing"]) for r in report),
            }
        )
    print()
    header = list(rows[0])
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(row[name]) for name in header))
    kills = sum(row["killed"] for row in rows)
    print(
        f"{TRIALS} trials, {kills} killed mid-ingest (whole ingest {whole_s:.1f} s): "
        f"lost {sum(r['lost'] for r in rows)}, orphan vectors {sum(r['orphans'] for r in rows)}, "
        f"missing vectors {sum(r['missing'] for r in rows)}, "
        f"topics as an uninterrupted ingest in {sum(r['same_topics'] for r in rows)}"
    )
    assert all(row["stored"] == expected and row["lost"] == 0 for row in rows)
    assert all(row["orphans"] == 0 and row["missing"] == 0 for row in rows)
    assert kills >= TRIALS / 2
