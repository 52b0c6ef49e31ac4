"""Load: 50 users talking to the bot at once through the fake Bot API on loopback, no LLM.

Each user sends 4 messages, every one its own turn: the next message is sent as soon as
the bot has started the turn of the previous one, without waiting for its answer, so it
arrives while that turn runs and queues behind it (turns of one chat never overlap).
Every message must be stored, every turn answered exactly once, in the chat it came from
and in the order of the questions (each answer replies to its question), all within
`BOUND_S`. The embedder is loaded before the clock starts. Run with Chroma embedded and
as a server (`vector_settings`). Printed: messages per second,
turn latency (update enqueued → answer sent) at p50 and p95, and the turn's own run time,
as a small table.

A benchmark: excluded from `make test`; run with
`.venv/bin/python -m pytest tests/e2e/test_load.py -m benchmark -q -s`.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeUser
from tests.support.bot_harness import RunningBot, running_bot
from tests.support.chroma_server import ChromaServer

USERS = [
    FakeUser(10_000 + index, f"User{index}", "ru" if index % 3 == 0 else "en")
    for index in range(50)
]
MESSAGES_PER_USER = 4
TURN_WAIT_S = 0.2
BOUND_S = 180.0

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(BOUND_S + 60)]


@dataclass
class Asked:
    message_id: int
    text: str
    enqueued_at: float


def question(user: FakeUser, number: int) -> str:
    if user.language_code == "ru":
        return f"{user.first_name}, вопрос {number}: что я говорил про Лиссабон и Ольгу?"
    return f"{user.first_name}, question {number}: what did I tell you about Lisbon and Olga?"


async def converse(running: RunningBot, user: FakeUser) -> list[Asked]:
    """The user's 4 messages, each sent once the previous one's turn has started."""
    api = running.api
    asked = []
    for number in range(1, MESSAGES_PER_USER + 1):
        text = question(user, number)
        message = api.send_text(user, text)
        asked.append(Asked(message["message_id"], text, api.enqueued_at[max(api.enqueued_at)]))
        external_id = f"tg-{user.id}-{message['message_id']}"
        await api.wait_until(
            lambda external_id=external_id: any(
                turn.external_id == external_id for turn in running.turns_of(user)
            ),
            within_s=BOUND_S,
            what=f"turn of {external_id}",
        )
    await api.wait_for_sent(user.id, MESSAGES_PER_USER, within_s=BOUND_S)
    return asked


def answers(running: RunningBot, user: FakeUser) -> list[ApiCall]:
    """The first part of each answer: the part that replies to the question."""
    return [
        call for call in running.api.sent_messages(user.id) if "reply_parameters" in call.params
    ]


def percentile(values: list[float], share: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[share - 1]


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name.ljust(width)}  {value}" for name, value in rows)


@pytest.fixture(params=["embedded", "server"])
def vector_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Chroma in the bot's process (the default), or a `chroma run` server on loopback.

    Embedded Chroma holds the GIL through an upsert (its Python bindings release it for
    reads, not writes: chroma-core/chroma#3873), so every turn's upsert stalls every other
    turn for its length; a server does the same work in its own process."""
    if request.param == "embedded":
        yield {}
        return
    server = ChromaServer(tmp_path / "chroma-server")
    server.start()
    try:
        yield {"chroma_host": "127.0.0.1", "chroma_port": server.port}
    finally:
        server.stop()


async def test_fifty_users_at_once_every_message_stored_and_answered_in_order(
    make_deps: Callable[..., Deps], vector_settings: dict[str, Any]
):
    async with running_bot(make_deps, USERS, turn_wait_s=TURN_WAIT_S, **vector_settings) as running:
        # The local embedder loads on first use (seconds); that is start-up, not load.
        running.deps.embedder.encode(["warm up"])
        started, cpu_started = time.monotonic(), time.process_time()
        asked_by_user = await asyncio.wait_for(
            asyncio.gather(*(converse(running, user) for user in USERS)), timeout=BOUND_S
        )
        elapsed = time.monotonic() - started
        cpu_per_turn = (time.process_time() - cpu_started) / (len(USERS) * MESSAGES_PER_USER)

        latencies, run_times = [], []
        for user, asked in zip(USERS, asked_by_user, strict=True):
            stored = running.deps.store.messages.all_of(user.id)
            questions = [m for m in stored if m["role"] == "user"]
            assert [m["content"] for m in questions] == [a.text for a in asked]
            assert sorted(m["external_id"] for m in stored if m["role"] == "assistant") == sorted(
                f"reply-to-{m['id']}" for m in questions
            ), "each question's answer stored once"

            turns = running.turns_of(user)
            assert [turn.external_id for turn in turns] == [
                f"tg-{user.id}-{a.message_id}" for a in asked
            ], "each message its own turn, in order"
            assert all(a.finished <= b.started for a, b in itertools.pairwise(turns))

            replies = answers(running, user)
            assert [r.params["reply_parameters"]["message_id"] for r in replies] == [
                a.message_id for a in asked
            ], "one answer per question, in the order of the questions"
            assert all(int(r.params["chat_id"]) == user.id for r in replies)
            latencies += [r.at - a.enqueued_at for r, a in zip(replies, asked, strict=True)]
            run_times += [turn.finished - turn.started for turn in turns]

        total = len(USERS) * MESSAGES_PER_USER
        assert len(latencies) == total and elapsed < BOUND_S
        print(
            "\n"
            + table(
                [
                    ("users at once", str(len(USERS))),
                    ("messages (= turns)", str(total)),
                    ("wall time", f"{elapsed:.1f} s"),
                    ("messages per second", f"{total / elapsed:.2f}"),
                    ("process CPU per message", f"{cpu_per_turn * 1000:.0f} ms"),
                    ("turn latency p50", f"{percentile(latencies, 50) * 1000:.0f} ms"),
                    ("turn latency p95", f"{percentile(latencies, 95) * 1000:.0f} ms"),
                    ("turn latency max", f"{max(latencies) * 1000:.0f} ms"),
                    ("turn run time p50", f"{percentile(run_times, 50) * 1000:.0f} ms"),
                    ("turn run time p95", f"{percentile(run_times, 95) * 1000:.0f} ms"),
                    ("grouping wait (turn_wait_s)", f"{TURN_WAIT_S * 1000:.0f} ms"),
                ]
            )
        )
