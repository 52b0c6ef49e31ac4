"""Two `topica bot` replicas in webhook mode sharing one PostgreSQL schedule: 50 reminders
of 50 users, due within the same 10 seconds, each delivered exactly once, close to its
time, and every run recorded once."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.render import html_to_plain
from stores.relational import RelationalStore
from tests.support.bot_api_server import FakeBotAPI
from tests.support.processes import free_port
from tests.support.replicas import start_replica

pytestmark = [pytest.mark.stores("postgres"), pytest.mark.timeout(300)]

USERS = 50
FIRST_USER = 7000


def delivered(api: FakeBotAPI) -> Counter[str]:
    return Counter(
        html_to_plain(call.params["text"])
        for call in api.sent_messages()
        if call.params["text"].startswith("⏰")
    )


async def test_two_replicas_deliver_each_due_reminder_once(
    relational_store: RelationalStore, tmp_path: Path
) -> None:
    settings = {
        "database_url": os.environ["TOPICA_DATABASE_URL"],
        "database_schema": os.environ["TOPICA_DATABASE_SCHEMA"],
        "database_pool_size": 2,
        "task_poll_s": 0.5,
    }
    async with FakeBotAPI() as api:
        replicas, statuses = [], []
        try:
            for index in range(2):
                port = free_port()
                replicas.append(
                    await start_replica(
                        api,
                        tmp_path / f"data{index}",
                        tmp_path / f"replica{index}.log",
                        port,
                        webhook_url=f"http://127.0.0.1:{port}/hook",
                        **settings,
                    )
                )
            start = datetime.now(UTC) + timedelta(seconds=3)
            wall_minus_monotonic = time.time() - time.monotonic()
            due = {}
            for number in range(USERS):
                at = start + timedelta(seconds=number % 10)
                user = FIRST_USER + number
                relational_store.tasks.add(user, f"reminder {number}", at, "UTC", None)
                due[f"⏰ reminder {number}"] = (user, at)
            await api.wait_until(
                lambda: len(delivered(api)) == USERS, within_s=60, what="every reminder"
            )
            await asyncio.sleep(3)
        finally:
            statuses = [await replica.stop() for replica in replicas]
    logs = "\n".join(replica.log() for replica in replicas)
    assert statuses == [0, 0], logs
    assert delivered(api) == dict.fromkeys(due, 1), logs
    for call in api.sent_messages():
        user, at = due[html_to_plain(call.params["text"])]
        assert int(call.params["chat_id"]) == user
        lateness = call.at + wall_minus_monotonic - at.timestamp()
        assert -1 <= lateness <= 10, (user, lateness)
    for user, _ in due.values():
        [task] = relational_store.tasks.of_user(user)
        assert task["state"] == "done"
        assert len(relational_store.tasks.runs(user, task["id"], limit=10)) == 1
