"""Processes racing over one data directory: opening a new one, ingesting for one user.

Real processes, started together behind a go-file so their critical moments overlap.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stores.locks import FileRunLock
from stores.relational.schema import MIGRATIONS
from tests.support.paths import DEMO_SESSION, ROOT, THREE_SITTINGS
from tests.support.processes import environment_without
from tests.support.soak import membership, topica_process

pytestmark = pytest.mark.timeout(300)

PAIRS = 12

OPEN_AFTER_GO = """
import pathlib, sys, time
from stores.relational import RelationalStore
go = pathlib.Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
RelationalStore(sys.argv[2]).close()
"""


def test_processes_opening_a_new_data_directory_at_once_all_succeed(tmp_path: Path):
    """Two processes per new directory, all migrating at the same moment: the version is
    read inside the migration's write transaction, so one migrates and the other waits,
    then finds the schema current (before: `table users already exists`)."""
    go = tmp_path / "go"
    databases = [tmp_path / f"data{pair}" / "topica.sqlite3" for pair in range(PAIRS)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_AFTER_GO, str(go), str(database)],
            cwd=ROOT,
            env=environment_without("TOPICA_"),
            stderr=subprocess.PIPE,
            text=True,
        )
        for database in databases
        for _ in range(2)
    ]
    time.sleep(2.0)  # every process imported and waiting
    go.touch()
    failures = [
        error.strip().splitlines()[-1]
        for process in processes
        for _, error in [process.communicate(timeout=120)]
        if process.returncode != 0
    ]
    assert failures == []
    for database in databases:
        with sqlite3.connect(database) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert {"users", "messages", "topics", "facts", "answers", "vector_pending"} <= tables


def test_a_second_ingest_of_a_user_waits_for_the_memory_run_holding_the_lock(tmp_path: Path):
    """While another process's memory run of user 1 holds the lock, an ingest stores its
    messages (first, always) but indexes and archives nothing; once released, it does."""
    data_dir = tmp_path / "data"
    lock = FileRunLock(data_dir / "locks")

    async def scenario() -> None:
        async with lock.hold(1):
            process = topica_process(
                "ingest", str(THREE_SITTINGS), "--data-dir", str(data_dir), "-v"
            )
            assert process.stderr is not None
            seen = []
            while not any("waiting for another memory run" in line for line in seen):
                line = await asyncio.to_thread(process.stderr.readline)
                assert line, f"the ingest ended without waiting: {''.join(seen)[-2000:]}"
                seen.append(line)
            assert stored(data_dir) == 60 and archived(data_dir) == 0
            assert not (data_dir / "chroma").exists()
        _, errors = await asyncio.to_thread(process.communicate, timeout=180)
        assert process.returncode == 0, errors
        topics, count = membership(data_dir)
        assert count == 60 and topics

    asyncio.run(scenario())


def test_two_ingests_of_one_user_at_once_both_succeed_and_archive_once(tmp_path: Path):
    """Before: one of them could exit 2 with `topics 18, 8 not both of user 1` (a merge
    racing the other run's), or leave a half-merged state. Now the second waits for the
    first's memory run; the result is that of one ingest alone."""
    reference = tmp_path / "reference"
    alone = topica_process("ingest", str(DEMO_SESSION), "--data-dir", str(reference))
    assert alone.wait(timeout=240) == 0, alone.communicate()[1]
    expected = membership(reference)

    data_dir = tmp_path / "data"
    processes = [
        topica_process("ingest", str(DEMO_SESSION), "--data-dir", str(data_dir), "--json")
        for _ in range(2)
    ]
    outcomes = [process.communicate(timeout=240) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], [e for _, e in outcomes]
    reports = sorted((json.loads(out) for out, _ in outcomes), key=lambda r: -r["new_messages"])
    assert [report["new_messages"] for report in reports] == [expected[1], 0]
    assert membership(data_dir) == expected


def stored(data_dir: Path) -> int:
    """Messages stored so far; 0 while the process has not yet created its schema."""
    try:
        with sqlite3.connect(f"file:{data_dir / 'topica.sqlite3'}?mode=ro", uri=True) as db:
            return db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    except sqlite3.OperationalError:  # no file yet, no table yet, or being migrated
        return 0


def archived(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "topica.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM messages WHERE topic_id IS NOT NULL").fetchone()[0]
