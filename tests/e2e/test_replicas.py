"""Three `topica bot` replicas on PostgreSQL and a `chroma run` server behind one webhook
URL (a round-robin forwarder), one of them killed with SIGKILL mid-run and started again.

50 users each ask 4 questions, one after another. Nothing may be lost or doubled: every
question is stored once and answered once, each chat's answers come in the order of its
questions, and every user's conversation ends up archived, each message in one topic,
by the replicas' memory workers (one replica archives a user at a time: their claims).
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.support.bot_api_server import FakeBotAPI
from tests.support.chroma_server import ChromaServer
from tests.support.replicas import FIRST_USER, ReplicaRun, answers_to, run_replicas

pytestmark = [pytest.mark.stores("postgres"), pytest.mark.timeout(600)]

USERS, MESSAGES = 50, 4


def replica_settings(chroma: ChromaServer) -> dict[str, object]:
    return {
        "chroma_host": "127.0.0.1",
        "chroma_port": chroma.port,
        "turn_wait_s": 0.2,
        "memory_worker_interval_s": 1,
        "chunk_interval": 3,
        "database_pool_size": 4,
    }


def store_rows(sql: str, *params: object) -> list[tuple]:
    url, schema = os.environ["TOPICA_DATABASE_URL"], os.environ["TOPICA_DATABASE_SCHEMA"]
    with psycopg.connect(url, options=f"-c search_path={schema}") as db:
        return db.execute(sql, params).fetchall()


def logged_errors(workdir: Path) -> list[str]:
    """The replicas' logged errors, each with the last line of its traceback."""
    found = []
    for log in sorted(workdir.glob("replica*.log")):
        lines = log.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines):
            if " ERROR " in line:
                trace = itertools.takewhile(lambda rest: not rest[:2].isdigit(), lines[n + 1 :])
                found.append(" | ".join([line, *list(trace)[-1:]]))
    return found


async def replicas_against_chroma(
    workdir: Path, replicas: int, **options: Any
) -> tuple[ReplicaRun, dict[int, list[int]]]:
    """`run_replicas` over `USERS` × `MESSAGES` questions with a Chroma server and the fake
    Bot API of its own; the run and the ids of the questions each user's answers replied
    to."""
    chroma = ChromaServer(workdir / "chroma")
    chroma.start()
    try:
        async with FakeBotAPI() as api:
            run = await run_replicas(
                workdir,
                replicas=replicas,
                users=USERS,
                messages=MESSAGES,
                settings=replica_settings(chroma),
                api=api,
                **options,
            )
            users = range(FIRST_USER, FIRST_USER + USERS)
            return run, {user: answers_to(api, user) for user in users}
    finally:
        chroma.stop()


def everyone_archived() -> bool:
    waiting = store_rows(
        "SELECT count(*) FROM messages WHERE topic_id IS NULL AND kind = 'conversation'"
    )[0][0]
    users = store_rows("SELECT count(DISTINCT user_id) FROM topics")[0][0]
    return waiting == 0 and users == USERS


async def test_three_replicas_one_killed_lose_and_double_nothing(
    store_engine: str, tmp_path: Path
) -> None:
    run, replies = await replicas_against_chroma(
        tmp_path, 3, kill_after=USERS * MESSAGES // 3, archived=everyone_archived
    )
    print(json.dumps(run.figures()))

    questions = [f"tg-{user}-{message}" for user, message in run.sent]
    assert len(questions) == USERS * MESSAGES == 200
    stored = Counter(
        external_id
        for (external_id,) in store_rows("SELECT external_id FROM messages WHERE role = 'user'")
    )
    assert {q: stored[q] for q in questions} == dict.fromkeys(questions, 1), "stored once each"
    assert sum(stored.values()) == 200, "nothing else was stored as a question"
    for user, got in replies.items():
        sent = [message for sender, message in run.sent if sender == user]
        assert got == sent, f"user {user}: one answer per question, in the questions' order"
    answers = store_rows(
        "SELECT count(*), count(DISTINCT external_id) FROM messages WHERE role = 'assistant'"
    )[0]
    assert answers == (200, 200), f"one stored answer per question; {logged_errors(tmp_path)}"
    per_user_order = store_rows(
        "SELECT user_id, array_agg(external_id ORDER BY seq) FROM messages "
        "WHERE role = 'user' GROUP BY user_id"
    )
    for user, ids in per_user_order:
        numbers = [int(external_id.rsplit("-", 1)[1]) for external_id in ids]
        assert numbers == sorted(numbers), f"user {user}: stored in the chat's order"
    empty_topics = store_rows(
        "SELECT count(*) FROM topics t WHERE NOT EXISTS "
        "(SELECT 1 FROM messages m WHERE m.topic_id = t.id)"
    )[0][0]
    assert everyone_archived() and empty_topics == 0, "every user archived, no topic twice"
    assert run.killed_at is not None and 0 < run.killed_at < 200, "killed mid-run"


@pytest.mark.benchmark
async def test_throughput_at_one_and_three_replicas(store_engine: str, tmp_path: Path) -> None:
    """`pytest -m benchmark -s tests/e2e/test_replicas.py`: the same 50 × 4 questions, no
    kill, through 1 and through 3 replicas; a table of throughput and turn latency."""
    rows = []
    for replicas in (1, 3):
        workdir = tmp_path / f"r{replicas}"
        os.environ["TOPICA_DATABASE_SCHEMA"] += f"_r{replicas}"
        run, _ = await replicas_against_chroma(workdir, replicas)
        assert len(run.turn_s) == USERS * MESSAGES
        rows.append(run.figures())
    print("\nreplicas | questions | throughput (q/s) | turn p50 (s) | turn p95 (s)")
    for row in rows:
        print(
            f"{row['replicas']} | {row['questions']} | {row['throughput_per_s']:.2f} | "
            f"{row['turn_p50_s']:.2f} | {row['turn_p95_s']:.2f}"
        )
