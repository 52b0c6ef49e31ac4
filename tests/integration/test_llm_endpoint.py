"""Endpoints as they are: what `topica doctor --llm` finds, and how agents ask.

The scripted server plays three endpoints (`tests.support.llm_endpoints`): one honouring
everything the OpenAI API promises; one behaving as llama.cpp's server does with a tiny
model (a named or `"required"` tool_choice ignored, so the model answers in prose; JSON
enforced by grammar, the model running on in JSON mode until its limit); and one ignoring
response_format and `max_completion_tokens`, its model answering in prose.
Agent calls go through `call_agent` with the real `ChatOpenAI` client, so each
mechanism is checked on the wire."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from cli.main import main
from core.models import ModelRegistry
from core.settings import Settings
from nodes.shared.agent import CHARS_PER_TOKEN_BOUND, LEDGER, AgentReply, call_agent
from tests.support.llm_endpoints import PROBES, honouring, ignoring_formats, llama_cpp_like
from tests.support.openai_server import ScriptedOpenAI, reply, respond, tool_call


async def probe_with_cli(server: ScriptedOpenAI, monkeypatch, tmp_path) -> tuple[int, dict]:
    monkeypatch.setenv("TOPICA_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("TOPICA_LLM_MODEL", "scripted")
    output = io.StringIO()

    def run() -> int:
        with contextlib.redirect_stdout(output):
            return main(["doctor", "--llm", "--json", "--data-dir", str(tmp_path / "none")])

    status = await asyncio.to_thread(run)
    return status, json.loads(output.getvalue())


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        (
            honouring,
            {
                "TOPICA_LLM_NAMED_TOOL_CHOICE": "true",
                "TOPICA_LLM_REQUIRED_TOOL_CHOICE": "true",
                "TOPICA_LLM_TOOL_CALLS": "true",
                "TOPICA_LLM_JSON_SCHEMA": "true",
                "TOPICA_LLM_JSON_OBJECT": "true",
                "TOPICA_LLM_TOKEN_LIMIT_FIELD": "max_completion_tokens",
            },
        ),
        (
            llama_cpp_like,
            {
                "TOPICA_LLM_NAMED_TOOL_CHOICE": "false",
                "TOPICA_LLM_REQUIRED_TOOL_CHOICE": "false",
                "TOPICA_LLM_TOOL_CALLS": "false",
                "TOPICA_LLM_JSON_SCHEMA": "true",
                "TOPICA_LLM_JSON_OBJECT": "true",
                "TOPICA_LLM_TOKEN_LIMIT_FIELD": "max_completion_tokens",
            },
        ),
        (
            ignoring_formats,
            {
                "TOPICA_LLM_NAMED_TOOL_CHOICE": "false",
                "TOPICA_LLM_REQUIRED_TOOL_CHOICE": "false",
                "TOPICA_LLM_TOOL_CALLS": "false",
                "TOPICA_LLM_JSON_SCHEMA": "false",
                "TOPICA_LLM_JSON_OBJECT": "false",
                "TOPICA_LLM_TOKEN_LIMIT_FIELD": "max_tokens",
            },
        ),
    ],
)
async def test_doctor_llm_prints_what_the_endpoint_honours(
    endpoint, expected, monkeypatch, tmp_path
):
    async with ScriptedOpenAI() as server:
        server.script(*[respond(endpoint)] * PROBES)
        status, result = await probe_with_cli(server, monkeypatch, tmp_path)
        assert not server.unscripted
    assert status == 0
    assert result["settings"] == expected
    assert not (tmp_path / "none").exists(), "the probe creates no data directory"


def test_doctor_llm_without_a_model_is_a_one_line_error(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("TOPICA_LLM_MODEL", raising=False)
    assert main(["doctor", "--llm", "--data-dir", str(tmp_path)]) == 2
    assert "TOPICA_LLM_MODEL" in capsys.readouterr().err


@tool
def record_word(word: str) -> str:
    """Record one word."""
    return word


def registry(server: ScriptedOpenAI, **capabilities: Any) -> ModelRegistry:
    settings = Settings(_env_file=None, llm_model=None, **capabilities)
    return ModelRegistry.fixed({"reranker": server.chat_model()}, settings)


async def forced_call(models: ModelRegistry) -> Any:
    return await call_agent(
        models,
        "reranker",
        [HumanMessage("Record the word apple.")],
        user_id=1,
        parse=lambda message: message,
        force_tool=record_word,
    )


@pytest.mark.parametrize(
    ("capabilities", "sent"),
    [
        ({}, {"type": "function", "function": {"name": "record_word"}}),
        ({"llm_named_tool_choice": False}, "required"),
        ({"llm_named_tool_choice": False, "llm_required_tool_choice": False}, None),
    ],
)
async def test_a_forced_call_uses_the_strongest_tool_choice_honoured(capabilities, sent):
    async with ScriptedOpenAI() as server:
        server.script(tool_call("record_word", {"word": "apple"}))
        result = await forced_call(registry(server, **capabilities))
        body = server.chat_requests[0].json_body
    assert isinstance(result, AgentReply) and result.repairs == ()
    assert result.value.tool_calls[0]["args"] == {"word": "apple"}
    assert body.get("tool_choice") == sent
    assert [tool["function"]["name"] for tool in body["tools"]] == ["record_word"]


async def test_a_call_written_as_content_is_repaired_and_recorded():
    LEDGER.clear()
    written = 'Sure! <tool_call>{"name": "record_word", "arguments": {"word": "pear"}}</tool_call>'
    async with ScriptedOpenAI() as server:
        server.script(reply(written), reply("I would rather not."))
        models = registry(server)
        repaired = await forced_call(models)
        refused = await forced_call(models)
    assert isinstance(repaired, AgentReply) and repaired.repairs == ("tool_call_in_content",)
    assert repaired.value.tool_calls[0]["name"] == "record_word"
    assert repaired.value.tool_calls[0]["args"] == {"word": "pear"}
    assert isinstance(refused, AgentReply) and not refused.value.tool_calls
    assert [call.outcome for call in LEDGER.calls()] == ["repaired", "invalid_output"]


async def test_without_tool_calls_the_arguments_are_asked_for_as_json():
    async with ScriptedOpenAI() as server:
        server.script(reply('```json\n{"word": "plum"}\n```'))
        models = registry(server, llm_tool_calls=False, llm_json_schema=True)
        result = await forced_call(models)
        body = server.chat_requests[0].json_body
    assert "tools" not in body and body["response_format"]["type"] == "json_schema"
    assert "record_word" in body["messages"][-1]["content"]
    assert isinstance(result, AgentReply) and result.repairs == ()
    assert result.value.tool_calls[0]["args"] == {"word": "plum"}


@pytest.mark.parametrize(
    ("field", "sent", "absent"),
    [
        ("max_completion_tokens", "max_completion_tokens", "max_tokens"),
        ("max_tokens", "max_tokens", "max_completion_tokens"),
    ],
)
async def test_each_call_is_bounded_in_the_field_the_endpoint_reads(field, sent, absent):
    async with ScriptedOpenAI() as server:
        server.script(reply("fine"))
        models = registry(server, llm_token_limit_field=field, reranker_max_tokens=77)
        await call_agent(models, "reranker", [HumanMessage("hi")], user_id=1)
        body = server.chat_requests[0].json_body
    assert body[sent] == 77 and absent not in body


@pytest.mark.parametrize("streamed", [True, False])
async def test_a_model_ignoring_its_token_limit_is_cut_at_the_bound(streamed: bool) -> None:
    endless = " ".join(f"word{index}" for index in range(40_000))  # about 300 KB
    async with ScriptedOpenAI() as server:
        server.script(reply(endless, pace_s=0.001 if streamed else 0))  # a token a millisecond
        models = registry(server, reranker_max_tokens=50)
        result = await call_agent(
            models,
            "reranker",
            [HumanMessage("hi")],
            user_id=1,
            stop=asyncio.Event() if streamed else None,
        )
        streams = server.streams
    bound = 50 * CHARS_PER_TOKEN_BOUND
    assert isinstance(result, AgentReply) and result.stopped, "cut, so marked partial"
    assert result.value == endless[:bound]
    if streamed:
        [stream] = streams
        assert not stream.completed and stream.chunks_sent < stream.chunks_total / 4
