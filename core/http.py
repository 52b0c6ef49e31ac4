"""HTTP connections that never outlive the event loop that opened them."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import httpx


class LoopScopedTransport(httpx.AsyncBaseTransport):
    """HTTP connections pooled per event loop.

    langchain-openai shares one `httpx.AsyncClient` per (base URL, timeout) across the
    whole process. Its pool keeps a keep-alive connection bound to the loop that opened
    it, so a second loop (each `asyncio.run`: CLI commands run in turn, a test after
    another) calling the same URL reused a dead loop's connection and failed with
    `RuntimeError: Event loop is closed`. Here each loop gets its own pool; a closed
    loop's pool goes with the loop."""

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    def _pool(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        if loop not in self._pools:
            self._pools[loop] = httpx.AsyncHTTPTransport()
        return self._pools[loop]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._pool().handle_async_request(request)

    async def aclose(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()
