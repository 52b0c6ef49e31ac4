"""The scripted OpenAI-compatible server's streaming, driven by the real `ChatOpenAI`:
scripted text and tool calls arrive in chunks and fragments, paced, and a client hanging up
mid-stream is recorded. The rest of its contract: tests/integration/test_openai_server.py.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.support.openai_clients import get_topics_content, make_llm
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call

# Every test talks to a local server with short client timeouts; this is a backstop only.
pytestmark = pytest.mark.timeout(20)


async def test_streaming_yields_scripted_text() -> None:
    text = "Streaming works, word by word."
    async with ScriptedOpenAI() as server:
        server.script(reply(text))

        chunks = [chunk async for chunk in make_llm(server).astream("stream please")]

        assert len(chunks) > 2
        assert "".join(str(c.content) for c in chunks) == text
        assert server.chat_requests[0].json_body["stream"] is True


async def test_streaming_tool_call() -> None:
    async with ScriptedOpenAI() as server:
        server.script(tool_call("get_topics_content", {"topic_ids": [1]}))
        llm = make_llm(server).bind_tools([get_topics_content])

        merged = None
        async for chunk in llm.astream("stream a tool call"):
            merged = chunk if merged is None else merged + chunk

        assert merged is not None
        assert merged.tool_calls[0]["name"] == "get_topics_content"
        assert merged.tool_calls[0]["args"] == {"topic_ids": [1]}


async def test_streamed_tool_call_arguments_arrive_in_fragments() -> None:
    """As the real API streams a call: a header delta with the id and name, then the JSON
    arguments in pieces, which LangChain must put back together."""
    arguments = {"topic_ids": [1, 22, 333], "note": "the vet's advice about Marzipan"}
    async with ScriptedOpenAI() as server:
        server.script(tool_call("get_topics_content", arguments))
        llm = make_llm(server).bind_tools([get_topics_content])

        chunks = [chunk async for chunk in llm.astream("stream a tool call")]

    pieces = [piece for chunk in chunks for piece in chunk.tool_call_chunks]
    assert [piece["name"] for piece in pieces if piece["name"]] == ["get_topics_content"]
    assert [piece["id"] for piece in pieces if piece["id"]] == ["call_1"]
    assert len([piece for piece in pieces if piece["args"]]) > 3
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.tool_calls == [
        {"name": "get_topics_content", "args": arguments, "id": "call_1", "type": "tool_call"}
    ]


async def test_streamed_reply_is_paced_and_recorded() -> None:
    text = "one two three four five six"
    async with ScriptedOpenAI() as server:
        server.script(reply(text, pace_s=0.05))

        received = [time.monotonic() async for _ in make_llm(server).astream("pace it")]

    [record] = server.streams
    assert record.completed and record.chunks_sent == record.chunks_total
    assert record.content_sent == text
    assert record.first_content_at == record.chunk_times[1]
    gaps = [later - earlier for earlier, later in itertools.pairwise(record.chunk_times[1:])]
    assert min(gaps) >= 0.045
    assert received[-1] - received[1] >= 0.045 * (len(text.split()) - 1)


async def test_a_client_hanging_up_mid_stream_is_recorded() -> None:
    """A client that stops reading (a user's stop button) closes the connection; the server
    writes no more (were it still connected, stopping the server would flush the rest)."""
    async with ScriptedOpenAI() as server:
        server.script(reply("word " * 60, pace_s=0.02))
        stream = make_llm(server).astream("hang up early")
        async for index, _ in _numbered(stream):
            if index == 5:
                break
        await stream.aclose()
        await asyncio.sleep(0.3)

    [record] = server.streams
    assert not record.completed
    assert record.chunks_sent < record.chunks_total


async def _numbered(items: AsyncIterator[Any]) -> AsyncIterator[tuple[int, Any]]:
    index = 0
    async for item in items:
        index += 1
        yield index, item


async def test_models_endpoint_and_start_stop() -> None:
    server = ScriptedOpenAI(models=("scripted", "other"))
    await server.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{server.base_url}/models") as resp,
        ):
            assert resp.status == 200
            payload = await resp.json()
        assert [m["id"] for m in payload["data"]] == ["scripted", "other"]
        assert server.requests[-1].path == "/v1/models"
    finally:
        await server.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{server.port}/v1/models") as resp,
        ):
            await resp.read()
