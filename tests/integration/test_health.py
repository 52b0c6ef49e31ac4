"""`/healthz` asks the real dependencies: 200 while all answer, 503 naming the one that
does not (a closed database, a Chroma server nobody runs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from app.monitoring import serve_metrics
from core.deps import Deps
from tests.support.processes import free_port


async def health_of(deps: Deps) -> httpx.Response:
    port = free_port()
    runner = await serve_metrics(
        "127.0.0.1",
        port,
        {
            "database": lambda: asyncio.to_thread(deps.store.ping),
            "vectors": lambda: asyncio.to_thread(deps.vectors.heartbeat),
        },
    )
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            return await client.get(f"http://127.0.0.1:{port}/healthz")
    finally:
        await runner.cleanup()


async def test_healthy_dependencies_answer_200(deps: Deps) -> None:
    deps.vectors.heartbeat()  # a running bot's client is open (opening one can take >3 s)
    response = await health_of(deps)
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "vectors": "ok"}
    assert response.json()["status"] == "ok" and response.json()["replica"]


async def test_an_unreachable_chroma_server_and_a_closed_database_answer_503(
    make_deps: Callable[..., Deps],
) -> None:
    deps = make_deps(chroma_host="127.0.0.1", chroma_port=free_port())
    response = await health_of(deps)
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == "ok" and checks["vectors"].startswith("error: ")
    deps.store.close()
    response = await health_of(deps)
    assert response.json()["checks"]["database"].startswith("error: ")
