"""The bot process's `/metrics` (Prometheus) and `/healthz` server."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


def metrics_app() -> web.Application:
    """`/metrics` in Prometheus' text format and `/healthz` for liveness probes."""

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    return app


async def serve_metrics(host: str, port: int) -> web.AppRunner:
    """Start the metrics server; the caller cleans up the returned runner on shutdown."""
    runner = web.AppRunner(metrics_app())
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
