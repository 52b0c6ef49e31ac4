"""Scripted endpoints for `topica doctor --llm`: `ScriptedOpenAI` answering each probe as
a real server does (`server.script(*[respond(endpoint)] * PROBES)`)."""

from __future__ import annotations

from typing import Any

from tests.support.openai_server import Reply, reply, tool_call

PROBES = 6
COUNTING = " ".join(str(number) for number in range(1, 400))
LOOPING_JSON = '{\n  "name": "Banana",\n  "description": "A ripe Banana",\n  "image": "https://i.st'
"""What a tiny model writes inside a server's JSON grammar until its token limit."""


def counted(limit: int | None) -> Reply:
    """Counting, as the probe of token limits asks, stopped at `limit` tokens if any."""
    return reply(" ".join(COUNTING.split()[: (limit or 400) // 2]))


def honouring(body: dict[str, Any]):
    """An endpoint that does what each request asks."""
    if body.get("tool_choice") not in (None, "auto", "none"):
        return tool_call("record_word", {"word": "apple"})
    if body.get("response_format"):
        return reply('{"word": "apple"}')
    return counted(body.get("max_completion_tokens") or body.get("max_tokens"))


def llama_cpp_like(body: dict[str, Any]):
    """llama.cpp's server with a tiny model: tool_choice ignored, so the model answers in
    prose; a JSON schema enforced by grammar; JSON mode enforced too, the model running on
    in it until its token limit; both token limit fields read."""
    if body.get("tools"):
        return reply("apple\n\nThe record_word tool is a tool that records words.")
    response_format = (body.get("response_format") or {}).get("type")
    if response_format == "json_schema":
        return reply('{\n  "word": "apple"\n}')
    if response_format == "json_object":
        return Reply(content=LOOPING_JSON, finish_reason="length")
    return counted(body.get("max_completion_tokens") or body.get("max_tokens"))


def ignoring_formats(body: dict[str, Any]):
    """An endpoint honouring `max_tokens` alone (as llama-cpp-python's server, which
    ignores `max_completion_tokens`): a model not made to write JSON answers in prose, or
    in a fenced block."""
    if body.get("tools"):
        return reply("I would record the word apple.")
    if body.get("response_format", {}).get("type") == "json_schema":
        return reply('```json\n{"fruit": "apple"}\n```')
    if body.get("response_format"):
        return reply("One fruit is the apple.")
    return counted(body.get("max_tokens"))
