"""Several `topica bot` replicas in webhook mode behind one URL, on one PostgreSQL store
and one `chroma run` server: a round-robin forwarder on loopback (a load balancer with no
health checks: a dead replica's requests fail with 502 and Telegram delivers them again),
replicas started and SIGKILLed as processes, and the run's figures.

`run_replicas` drives `users` fake users, each sending `messages` questions one after
another (each once the previous one's answer came), kills one replica (SIGKILL) after
`kill_after` answers and starts it again, then waits for every answer and, given
`archived`, until the replicas' memory workers have archived every user.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_process import TOPICA_BOT, BotProcess
from tests.support.paths import ROOT
from tests.support.processes import free_port, untraced_environment

SECRET = "replica-shared-secret"
FIRST_USER = 5000


class RoundRobin:
    """An HTTP forwarder to `upstreams` in turn; 502 when the chosen one fails. The
    response's body and type go back as they came (an answer may ride in it)."""

    def __init__(self, upstreams: list[int]) -> None:
        self.upstreams = upstreams
        self.port = free_port()
        self._next = itertools.cycle(range(len(upstreams)))
        self._runner: web.AppRunner | None = None
        self.failures = 0

    async def _forward(self, request: web.Request) -> web.Response:
        port = self.upstreams[next(self._next)]
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session,
                session.post(
                    f"http://127.0.0.1:{port}{request.path}", data=body, headers=headers
                ) as response,
            ):
                return web.Response(
                    status=response.status,
                    body=await response.read(),
                    headers={
                        name: value
                        for name, value in response.headers.items()
                        if name.lower() == "content-type"
                    },
                )
        except (aiohttp.ClientError, TimeoutError):
            self.failures += 1
            return web.Response(status=502)

    async def __aenter__(self) -> RoundRobin:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram/hook"


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


async def start_replica(
    api: FakeBotAPI, data_dir: Path, log_path: Path, port: int, **settings: Any
) -> BotProcess:
    """`topica bot` in webhook mode on `port`; returns once it accepts connections."""
    environment = {
        **untraced_environment(),
        "TOPICA_TELEGRAM_TOKEN": api.token,
        "TOPICA_TELEGRAM_API_URL": api.base_url,
        "TOPICA_DATA_DIR": str(data_dir),
        "TOPICA_WEBHOOK_HOST": "127.0.0.1",
        "TOPICA_WEBHOOK_PORT": str(port),
        "TOPICA_WEBHOOK_SECRET": SECRET,
        **{f"TOPICA_{name.upper()}": str(value) for name, value in settings.items()},
    }
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", TOPICA_BOT, env=environment, cwd=ROOT, stderr=log
        )
    replica = BotProcess(process, log_path)
    deadline = time.monotonic() + 90
    while not _accepts(port):
        if process.returncode is not None:
            raise RuntimeError(f"replica exited with {process.returncode}:\n{replica.log()}")
        if time.monotonic() > deadline:
            await replica.kill()
            raise RuntimeError(f"replica did not listen on {port}:\n{replica.log()}")
        await asyncio.sleep(0.2)
    return replica


@dataclass
class ReplicaRun:
    replicas: int
    users: int
    messages: int
    sent: list[tuple[int, int]] = field(default_factory=list)
    """(user id, Telegram message id) of every question, in sending order."""
    turn_s: list[float] = field(default_factory=list)
    """Per question: from sending it to its answer arriving."""
    wall_s: float = 0.0
    killed_at: int | None = None
    """How many questions had their answer when the replica was killed."""
    redeliveries: int = 0
    forwarder_failures: int = 0

    def figures(self) -> dict[str, float]:
        ordered = sorted(self.turn_s)
        return {
            "replicas": self.replicas,
            "questions": len(self.sent),
            "throughput_per_s": len(self.sent) / self.wall_s if self.wall_s else 0.0,
            "turn_p50_s": statistics.median(ordered),
            "turn_p95_s": ordered[max(0, round(0.95 * len(ordered)) - 1)],
        }


def answers_to(api: FakeBotAPI, user_id: int) -> list[int]:
    """The message ids the user's answers replied to, in the order they were sent."""
    return [
        int(call.params["reply_parameters"]["message_id"])
        for call in api.sent_messages(user_id)
        if call.params.get("reply_parameters")
    ]


async def run_replicas(
    workdir: Path,
    *,
    replicas: int,
    users: int,
    messages: int,
    settings: dict[str, Any],
    kill_after: int | None = None,
    api: FakeBotAPI,
    archived: Callable[[], bool] | None = None,
) -> ReplicaRun:
    ports = [free_port() for _ in range(replicas)]
    people = [FakeUser(FIRST_USER + n, f"User {n}", "en") for n in range(users)]
    settings = {
        **settings,
        "allowed_user_ids": ",".join(str(person.id) for person in people),
    }
    run = ReplicaRun(replicas, users, messages)
    api.redeliver_s = 90.0
    async with RoundRobin(ports) as forwarder:
        settings["webhook_url"] = forwarder.url
        running = [
            await start_replica(
                api, workdir / f"replica{n}", workdir / f"replica{n}.log", port, **settings
            )
            for n, port in enumerate(ports)
        ]
        await api.wait_until(lambda: api.webhook_url, what="setWebhook")
        started = time.monotonic()
        answered = 0

        async def converse(person: FakeUser) -> None:
            nonlocal answered
            for number in range(messages):
                sent = api.send_text(person, f"Note {number} of {person.first_name}: item {number}")
                at = time.monotonic()
                run.sent.append((person.id, sent["message_id"]))
                await api.wait_until(
                    lambda sent=sent: sent["message_id"] in answers_to(api, person.id),
                    within_s=240,
                    what=f"the answer to {person.id}'s message {sent['message_id']}",
                )
                run.turn_s.append(time.monotonic() - at)
                answered += 1

        async def kill_and_restart() -> None:
            await api.wait_until(lambda: answered >= (kill_after or 0), within_s=240)
            victim = len(running) // 2
            run.killed_at = answered
            await running[victim].kill()
            await asyncio.sleep(2.0)
            running[victim] = await start_replica(
                api,
                workdir / f"replica{victim}",
                workdir / f"replica{victim}.log",
                ports[victim],
                **settings,
            )

        tasks = [converse(person) for person in people]
        if kill_after is not None:
            tasks.append(kill_and_restart())
        try:
            await asyncio.gather(*tasks)
            run.wall_s = time.monotonic() - started
            if archived is not None:  # the replicas' memory workers archive every user
                await api.wait_until(archived, within_s=240, what="every user archived")
        finally:
            run.redeliveries = api.redeliveries
            run.forwarder_failures = forwarder.failures
            for replica in running:
                await replica.stop()
    return run
