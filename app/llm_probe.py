"""`topica doctor --llm`: what the configured chat endpoint honours, tried one by one.

Each probe is one small chat request to `{TOPICA_LLM_BASE_URL}/chat/completions` with
the default model, and is judged by the reply alone: a tool choice is honoured when the
reply calls the tool it named, a token limit when the reply stops within it. A JSON
format is judged by what the server does, not by what the model knows: the prompt names
no keys, so only a schema the server enforces makes the reply hold the schema's key, and
a reply cut at its token limit counts by what it wrote (a model looping inside the
server's JSON grammar still writes nothing but JSON). A refused request (HTTP 4xx/5xx) or a
failed one is "not honoured", with the reason. The result names the `TOPICA_LLM_*`
settings that match the endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pydantic_core

from core.settings import Settings

PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "record_word",
        "description": "Record one word.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
}
WORD_SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string", "maxLength": 12}},
    "required": ["word"],
    "additionalProperties": False,
}
TOOL_PROMPT = "Record the word 'apple' with the record_word tool."
JSON_PROMPT = "Name one fruit. Reply in JSON."
COUNT_PROMPT = "Count from 1 to 200, separated by spaces."
TOKEN_LIMIT = 8
REPLY_TOKENS = 200
JSON_REPLY_TOKENS = 32
"""Enough for the schema's one short word; a reply running on is cut and judged so far."""
NOT_JSON = object()


@dataclass(frozen=True)
class Probe:
    capability: str
    setting: str
    body: dict[str, Any]
    check: Callable[[dict[str, Any]], bool]


def _message(reply: dict[str, Any]) -> dict[str, Any]:
    return (reply.get("choices") or [{}])[0].get("message") or {}


def calls_tool(reply: dict[str, Any]) -> bool:
    calls = _message(reply).get("tool_calls") or []
    return any((call.get("function") or {}).get("name") == "record_word" for call in calls)


def written_json(reply: dict[str, Any]) -> Any:
    """The reply's text as JSON: whole, or, when the reply was cut at its token limit, as
    far as it got (a valid beginning, nothing after); `NOT_JSON` otherwise."""
    text = (_message(reply).get("content") or "").strip()
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        if (reply.get("choices") or [{}])[0].get("finish_reason") != "length":
            return NOT_JSON
        try:
            return pydantic_core.from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return NOT_JSON
    return value if end == len(text) else NOT_JSON


def json_with_word(reply: dict[str, Any]) -> bool:
    """The schema's shape: its one key `word`, a string, and no other."""
    value = written_json(reply)
    return isinstance(value, dict) and set(value) == {"word"} and isinstance(value["word"], str)


def json_object(reply: dict[str, Any]) -> bool:
    return isinstance(written_json(reply), dict)


def within_limit(reply: dict[str, Any]) -> bool:
    used = (reply.get("usage") or {}).get("completion_tokens")
    if isinstance(used, int):
        return used <= TOKEN_LIMIT
    return (reply.get("choices") or [{}])[0].get("finish_reason") == "length"


def probes() -> list[Probe]:
    tool_ask = {"messages": [{"role": "user", "content": TOOL_PROMPT}], "tools": [PROBE_TOOL]}
    named = {"type": "function", "function": {"name": "record_word"}}
    json_ask = {
        "messages": [{"role": "user", "content": JSON_PROMPT}],
        "max_tokens": JSON_REPLY_TOKENS,
    }
    count = {"messages": [{"role": "user", "content": COUNT_PROMPT}]}
    schema = {"type": "json_schema", "json_schema": {"name": "word", "schema": WORD_SCHEMA}}
    return [
        Probe("named tool choice", "NAMED_TOOL_CHOICE", {**tool_ask, "tool_choice": named},
              calls_tool),
        Probe("required tool choice", "REQUIRED_TOOL_CHOICE",
              {**tool_ask, "tool_choice": "required"}, calls_tool),
        Probe("json_schema", "JSON_SCHEMA", {**json_ask, "response_format": schema},
              json_with_word),
        Probe("json_object", "JSON_OBJECT",
              {**json_ask, "response_format": {"type": "json_object"}}, json_object),
        Probe("max_tokens", "TOKEN_LIMIT_FIELD", {**count, "max_tokens": TOKEN_LIMIT},
              within_limit),
        Probe("max_completion_tokens", "TOKEN_LIMIT_FIELD",
              {**count, "max_completion_tokens": TOKEN_LIMIT}, within_limit),
    ]  # fmt: skip


async def run_probe(client: httpx.AsyncClient, model: str, probe: Probe) -> dict[str, Any]:
    body = {"model": model, "temperature": 0, **probe.body}
    if "max_tokens" not in body and "max_completion_tokens" not in body:
        body["max_tokens"] = REPLY_TOKENS
    try:
        response = await client.post("/chat/completions", json=body)
    except httpx.HTTPError as error:
        return {"capability": probe.capability, "honoured": False, "detail": repr(error)[:120]}
    if response.status_code >= 400:
        detail = f"HTTP {response.status_code}: {response.text[:100]}"
        return {"capability": probe.capability, "honoured": False, "detail": detail}
    reply = response.json()
    honoured = probe.check(reply)
    message = _message(reply)
    seen = "tool call" if message.get("tool_calls") else repr((message.get("content") or "")[:60])
    return {"capability": probe.capability, "honoured": honoured, "detail": seen}


def recommended(results: list[dict[str, Any]]) -> dict[str, str]:
    """The `TOPICA_LLM_*` settings that match what the endpoint honoured."""
    works = {result["capability"]: result["honoured"] for result in results}
    flag = {True: "true", False: "false"}
    limit = "max_completion_tokens"
    if not works["max_completion_tokens"] and works["max_tokens"]:
        limit = "max_tokens"
    return {
        "TOPICA_LLM_NAMED_TOOL_CHOICE": flag[works["named tool choice"]],
        "TOPICA_LLM_REQUIRED_TOOL_CHOICE": flag[works["required tool choice"]],
        "TOPICA_LLM_TOOL_CALLS": flag[works["named tool choice"] or works["required tool choice"]],
        "TOPICA_LLM_JSON_SCHEMA": flag[works["json_schema"]],
        "TOPICA_LLM_JSON_OBJECT": flag[works["json_object"]],
        "TOPICA_LLM_TOKEN_LIMIT_FIELD": limit,
    }


async def probe_endpoint(settings: Settings) -> dict[str, Any]:
    """Each capability tried against the configured endpoint, and the settings to use.
    Raises `ValueError` when no endpoint or model is configured."""
    if not settings.llm_model:
        raise ValueError("no chat model configured (TOPICA_LLM_MODEL)")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "not-needed"
    base_url = (settings.llm_base_url or "https://api.openai.com/v1").rstrip("/")
    async with httpx.AsyncClient(
        base_url=base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=settings.llm_timeout_s,
    ) as client:
        results = [await run_probe(client, settings.llm_model, probe) for probe in probes()]
    return {
        "endpoint": base_url,
        "model": settings.llm_model,
        "capabilities": results,
        "settings": recommended(results),
    }
