"""The bot process's `/metrics` (Prometheus) and `/healthz` server."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

Check = Callable[[], Awaitable[object]]
CHECK_TIMEOUT_S = 3.0


async def run_checks(checks: Mapping[str, Check]) -> dict[str, str]:
    """Each dependency's state: "ok", or what went wrong (a timeout included)."""

    async def one(check: Check) -> str:
        try:
            await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
        except Exception as error:  # reported, never raised: a probe must answer
            return f"error: {type(error).__name__}: {error}"[:300]
        return "ok"

    results = await asyncio.gather(*(one(check) for check in checks.values()))
    return dict(zip(checks, results, strict=True))


def metrics_app(checks: Mapping[str, Check] | None = None) -> web.Application:
    """`/metrics` in Prometheus' text format; `/healthz` checks each dependency (the
    database, the vector store, Telegram) and answers 200 when all answer, 503 otherwise,
    naming the replica (host and process) that answered."""
    replica = f"{socket.gethostname()}:{os.getpid()}"

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_request: web.Request) -> web.Response:
        results = await run_checks(checks or {})
        healthy = all(result == "ok" for result in results.values())
        return web.json_response(
            {"status": "ok" if healthy else "unavailable", "checks": results, "replica": replica},
            status=200 if healthy else 503,
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    return app


async def serve_metrics(
    host: str, port: int, checks: Mapping[str, Check] | None = None
) -> web.AppRunner:
    """Start the metrics server; the caller cleans up the returned runner on shutdown."""
    runner = web.AppRunner(metrics_app(checks))
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
