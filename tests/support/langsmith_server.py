"""A LangSmith API on loopback holding datasets and examples in memory: enough of the
REST surface for `langsmith.Client`'s dataset calls (read, create, list and bulk-create
examples), with every request recorded."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from bench.llm_server import serve_on_loopback


@dataclass
class LangSmithServer:
    url: str = ""
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)

    def examples_of(self, dataset_id: str) -> list[dict[str, Any]]:
        return [example for example in self.examples if example["dataset_id"] == dataset_id]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path))
        now = datetime.now(UTC).isoformat()
        route = (request.method, request.path)
        if route == ("GET", "/info"):
            return web.json_response({"version": "0.10.0", "instance_flags": {}})
        if route == ("GET", "/datasets"):
            name = request.query.get("name")
            return web.json_response([d for d in self.datasets.values() if d["name"] == name])
        if route == ("POST", "/datasets"):
            body = await request.json()
            if any(d["name"] == body["name"] for d in self.datasets.values()):
                return web.json_response({"detail": "dataset exists"}, status=409)
            dataset = {
                "id": str(uuid.uuid4()),
                "name": body["name"],
                "description": body.get("description"),
                "data_type": body.get("data_type"),
                "created_at": now,
            }
            self.datasets[dataset["id"]] = dataset
            return web.json_response(dataset)
        if route == ("GET", "/examples"):
            rows = self.examples_of(request.query["dataset"])
            offset, limit = int(request.query.get("offset", 0)), int(request.query["limit"])
            return web.json_response(rows[offset : offset + limit])
        if route == ("POST", "/examples/bulk"):
            created = []
            for body in await request.json():
                if body["dataset_id"] not in self.datasets:
                    return web.json_response({"detail": "no such dataset"}, status=404)
                example = {**body, "id": str(uuid.uuid4()), "created_at": now}
                self.examples.append(example)
                created.append(example)
            return web.json_response(created)
        return web.json_response({"detail": f"not served here: {route}"}, status=404)


@asynccontextmanager
async def langsmith_server() -> AsyncIterator[LangSmithServer]:
    server = LangSmithServer()
    runner = web.AppRunner(server.app())
    port = await serve_on_loopback(runner)
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()
