"""Chat model clients across event loops: each `asyncio.run` (a CLI command, a test)
has its own loop, and an HTTP connection must never outlive the loop that opened it.

The server runs in a thread of its own, so it outlives both loops and keeps the
connection alive between them, as a real provider does."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.models import ModelRegistry, openai_chat_model
from core.settings import Settings


class KeepAliveCompletions(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client pools the connection

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "scripted",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "pong"},
                        "finish_reason": "stop",
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def base_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAliveCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_new_models_on_the_same_url_in_two_event_loops(base_url: str):
    """Before: langchain-openai's process-wide client for the URL reused the first loop's
    pooled connection in the second: `RuntimeError: Event loop is closed` (the flaky
    `test_a_failing_responder_gives_the_memory_only_answer[http_500]`)."""

    async def ask() -> str:
        model = openai_chat_model("scripted", base_url, "test", 5.0, 0)
        return (await model.ainvoke("ping")).text

    assert [asyncio.run(ask()), asyncio.run(ask()), asyncio.run(ask())] == ["pong"] * 3


def test_one_registrys_model_in_two_event_loops(base_url: str):
    registry = ModelRegistry(Settings(llm_base_url=base_url, llm_model="scripted", _env_file=None))
    model = registry.get("responder")
    assert model is not None

    async def ask() -> str:
        return (await model.ainvoke("ping")).text

    assert [asyncio.run(ask()), asyncio.run(ask())] == ["pong"] * 2
