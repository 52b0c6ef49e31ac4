"""Tests for the scripted OpenAI-compatible server, driven by the real LangChain clients.

Why: every other test that relies on ``ScriptedOpenAI`` assumes the real ``ChatOpenAI`` /
``OpenAIEmbeddings`` clients parse its replies and map its failures exactly like the real API.
These tests pin that contract down, so a library upgrade that changes the wire format breaks
here first rather than as a confusing failure elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import OpenAIEmbeddings

from tests.support.openai_clients import get_topics_content, make_llm
from tests.support.openai_server import (
    ScriptedOpenAI,
    Step,
    delay,
    drop_connection,
    embed_text,
    empty_reply,
    http_error,
    raw_content,
    reply,
    respond,
    tool_call,
    tool_calls,
)

# Every test talks to a local server with short client timeouts; this is a backstop only.
pytestmark = pytest.mark.timeout(20)


@asynccontextmanager
async def make_embeddings(server: ScriptedOpenAI) -> AsyncIterator[OpenAIEmbeddings]:
    """The real embeddings client with an explicitly closed HTTP client.

    Why: otherwise the SDK's default client is garbage-collected during a *later* test and
    tries to close its sockets on this test's (by then closed) event loop, logging noise.
    """
    async with openai.DefaultAsyncHttpxClient() as http_client:
        yield server.embeddings_model(http_client)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_plain_reply_round_trip_records_request() -> None:
    async with ScriptedOpenAI() as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        server.script(reply("Hello from the script"))

        result = await make_llm(server).ainvoke(
            [SystemMessage("You are terse."), HumanMessage("Hi there")]
        )

        assert isinstance(result, AIMessage)
        assert result.content == "Hello from the script"
        assert result.response_metadata["finish_reason"] == "stop"
        assert result.usage_metadata is not None
        assert result.usage_metadata["input_tokens"] > 0
        assert result.usage_metadata["output_tokens"] > 0

        assert len(server.chat_requests) == 1
        recorded = server.chat_requests[0]
        assert recorded.path == "/v1/chat/completions"
        assert recorded.json_body["model"] == "scripted"
        assert recorded.json_body["messages"] == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi there"},
        ]
        assert recorded.headers["Authorization"] == "Bearer test"
        assert server.pending == 0
        assert server.unscripted == []


async def test_bind_tools_with_forced_tool_choice() -> None:
    async with ScriptedOpenAI() as server:
        server.script(tool_call("get_topics_content", {"topic_ids": [3, 7]}, call_id="call_abc"))
        forced = {"type": "function", "function": {"name": "get_topics_content"}}
        llm = make_llm(server).bind_tools([get_topics_content], tool_choice=forced)

        result = await llm.ainvoke("Which topics mention Rust?")

        body = server.chat_requests[0].json_body
        assert body["tool_choice"] == forced
        assert [t["function"]["name"] for t in body["tools"]] == ["get_topics_content"]
        params = body["tools"][0]["function"]["parameters"]
        assert params["properties"]["topic_ids"]["type"] == "array"

        assert isinstance(result, AIMessage)
        assert result.response_metadata["finish_reason"] == "tool_calls"
        assert result.tool_calls == [
            {
                "name": "get_topics_content",
                "args": {"topic_ids": [3, 7]},
                "id": "call_abc",
                "type": "tool_call",
            }
        ]


async def test_parallel_tool_calls_get_distinct_ids_and_json_encoded_args() -> None:
    async with ScriptedOpenAI() as server:
        server.script(tool_calls([("a", {"x": 1}), ("b", {"y": "two"})]))

        result = await make_llm(server).ainvoke("go")

        assert [(c["name"], c["args"]) for c in result.tool_calls] == [
            ("a", {"x": 1}),
            ("b", {"y": "two"}),
        ]
        ids = [c["id"] for c in result.tool_calls]
        assert len(set(ids)) == 2
        assert all(isinstance(i, str) and i for i in ids)

        # On the wire the arguments are a JSON string, as with the real API: check with the
        # bare openai client, which exposes the undecoded payload.
        server.script(tool_calls([("a", {"x": 1})]))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        completion = await client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "go"}]
        )
        await client.close()
        raw_call = completion.choices[0].message.tool_calls[0]
        assert isinstance(raw_call.function.arguments, str)
        assert json.loads(raw_call.function.arguments) == {"x": 1}


async def test_response_format_is_recorded() -> None:
    async with ScriptedOpenAI() as server:
        server.script(raw_content('{"topics": [1, 2'))  # deliberately truncated JSON
        llm = make_llm(server).bind(response_format={"type": "json_object"})

        result = await llm.ainvoke("Return JSON")

        assert server.chat_requests[0].json_body["response_format"] == {"type": "json_object"}
        assert result.content == '{"topics": [1, 2'


async def test_http_500_raises_internal_server_error() -> None:
    async with ScriptedOpenAI() as server:
        server.script(http_error(500, "boom"))

        with pytest.raises(openai.InternalServerError) as info:
            await make_llm(server).ainvoke("hi")

        assert info.value.status_code == 500
        assert "boom" in str(info.value)
        assert len(server.chat_requests) == 1  # max_retries=0: no hidden retry


async def test_http_429_raises_rate_limit_error_with_retry_after() -> None:
    async with ScriptedOpenAI() as server:
        server.script(http_error(429, "slow down", retry_after=0.1))

        with pytest.raises(openai.RateLimitError) as info:
            await make_llm(server).ainvoke("hi")

        assert info.value.status_code == 429
        assert info.value.response.headers["retry-after"] == "0.1"
        assert isinstance(info.value.body, dict)
        assert info.value.body["message"] == "slow down"


async def test_rate_limit_is_retried_by_client_when_retries_enabled() -> None:
    """The Retry-After header must be honoured by the openai client's own retry loop."""
    async with ScriptedOpenAI() as server:
        server.script(http_error(429, retry_after=0.05), reply("after retry"))
        llm = server.chat_model(timeout=2, max_retries=1)

        result = await llm.ainvoke("hi")

        assert result.content == "after retry"
        assert len(server.chat_requests) == 2


async def test_delay_beyond_client_timeout_raises_timeout() -> None:
    started = time.monotonic()
    async with ScriptedOpenAI() as server:
        server.script(delay(10, then=reply("too late")))

        with pytest.raises(openai.APITimeoutError):
            await make_llm(server, timeout=0.3).ainvoke("hi")
    # Stopping the server must not wait for the 10 s delay to finish.
    assert time.monotonic() - started < 5


async def test_delay_within_timeout_answers_with_then_step() -> None:
    async with ScriptedOpenAI() as server:
        server.script(delay(0.05, then=reply("worth the wait")))

        result = await make_llm(server).ainvoke("hi")

        assert result.content == "worth the wait"


async def test_drop_connection_raises_connection_error_and_server_survives() -> None:
    async with ScriptedOpenAI() as server:
        server.script(drop_connection(), reply("still alive"))
        llm = make_llm(server)

        with pytest.raises(openai.APIConnectionError) as info:
            await llm.ainvoke("hi")
        assert not isinstance(info.value, openai.APITimeoutError)

        result = await llm.ainvoke("again")
        assert result.content == "still alive"


async def test_exhausted_script_errors_and_is_recorded_as_unscripted() -> None:
    async with ScriptedOpenAI() as server:
        server.script(reply("only one"))
        llm = make_llm(server)
        assert (await llm.ainvoke("first")).content == "only one"
        assert server.unscripted == []

        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            await llm.ainvoke("second")

        assert len(server.unscripted) == 1
        assert server.unscripted[0].json_body["messages"][-1]["content"] == "second"


async def test_empty_reply_and_dynamic_respond() -> None:
    async def echo_last(body: dict[str, Any]) -> Step:
        await asyncio.sleep(0)
        return reply("echo: " + body["messages"][-1]["content"])

    async with ScriptedOpenAI() as server:
        server.script(
            empty_reply(),
            respond(echo_last),
            respond(lambda body: tool_call("t", {"n": len(body["messages"])})),
        )
        llm = make_llm(server)

        assert (await llm.ainvoke("a")).content == ""
        assert (await llm.ainvoke("ping")).content == "echo: ping"
        third = await llm.ainvoke([HumanMessage("x"), AIMessage("y"), HumanMessage("z")])
        assert third.tool_calls[0]["args"] == {"n": 3}


async def test_failing_respond_callback_is_reported() -> None:
    def broken(body: dict[str, Any]) -> Step:
        raise KeyError("missing")

    async with ScriptedOpenAI() as server:
        server.script(respond(broken))

        with pytest.raises(openai.InternalServerError, match="respond"):
            await make_llm(server).ainvoke("hi")

        assert len(server.errors) == 1
        assert isinstance(server.errors[0], KeyError)


async def test_embeddings_dimension_and_similarity() -> None:
    async with ScriptedOpenAI(embedding_dim=16) as server, make_embeddings(server) as embeddings:
        texts = [
            "rust borrow checker lifetimes",
            "The Rust borrow checker and lifetimes explained",
            "banana bread recipe with walnuts",
        ]

        vectors = await embeddings.aembed_documents(texts)
        query = await embeddings.aembed_query("rust lifetimes")

        assert len(vectors) == 3
        assert all(len(v) == 16 for v in vectors)
        assert all(abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-5 for v in vectors)
        assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
        assert cosine(query, vectors[0]) > cosine(query, vectors[2])
        # The client-side decoding (base64 float32) matches the helper within float32 precision.
        expected = embed_text(texts[0], 16)
        assert all(abs(a - b) < 1e-6 for a, b in zip(vectors[0], expected, strict=True))

        recorded = server.embedding_requests[0].json_body
        assert recorded["model"] == "scripted-embed"
        assert recorded["input"] == texts
        assert server.chat_requests == []


async def test_embeddings_are_deterministic_across_calls() -> None:
    async with ScriptedOpenAI(embedding_dim=8) as server, make_embeddings(server) as embeddings:
        first = await embeddings.aembed_query("same words here")
        second = await embeddings.aembed_query("Same   WORDS, here!")
        assert len(first) == 8
        assert first == pytest.approx(second)
