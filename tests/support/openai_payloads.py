"""The bodies the scripted OpenAI-compatible server (`tests.support.openai_server`) answers
with, built as the real API builds them: error bodies with the real error types, chat
completions with tool calls and usage, and the chunks of a streamed completion."""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import time
from typing import Any

from aiohttp import web

from tests.support.openai_script import HttpError, Reply, ToolCalls, embed_tokens, tokens_of

# Mirrors the error "type" the real API uses for the common statuses, so that code inspecting
# ``exc.body["type"]`` sees realistic values.
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "server_error",
    503: "server_error",
}


def _approx_tokens(value: Any) -> int:
    """A rough token count (~4 characters per token), good enough for usage blocks."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, len(text) // 4) if text else 0


def error_response(error: HttpError) -> web.Response:
    """The error as the real API sends it: its status, ``Retry-After`` and an error body."""
    headers: dict[str, str] = {}
    if error.retry_after is not None:
        headers["Retry-After"] = f"{error.retry_after:g}"
        headers["retry-after-ms"] = str(int(error.retry_after * 1000))
    payload = {
        "error": {
            "message": error.message,
            "type": error.error_type or _ERROR_TYPES.get(error.status, "api_error"),
            "param": None,
            "code": error.code,
        }
    }
    return web.json_response(payload, status=error.status, headers=headers)


def embeddings_body(body: dict[str, Any], default_dim: int) -> dict[str, Any]:
    """The embeddings of a request's ``input`` (one text or token array, or a batch) as the
    real API returns them: float lists, or little-endian float32 in base64 when asked."""
    inputs = body["input"]
    # A single string, or a single token array, is one input; anything else is a batch.
    if isinstance(inputs, str) or (
        isinstance(inputs, list) and inputs and all(isinstance(x, int) for x in inputs)
    ):
        inputs = [inputs]
    dim = int(body.get("dimensions") or default_dim)
    as_base64 = body.get("encoding_format") == "base64"
    data: list[dict[str, Any]] = []
    total_tokens = 0
    for index, item in enumerate(inputs):
        tokens = tokens_of(item)
        total_tokens += len(tokens)
        vector = embed_tokens(tokens, dim)
        embedding: Any = vector
        if as_base64:
            # The openai client asks for base64 by default and decodes little-endian float32.
            packed = struct.pack(f"<{len(vector)}f", *vector)
            embedding = base64.b64encode(packed).decode("ascii")
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "scripted-embed"),
        "usage": {"prompt_tokens": total_tokens, "total_tokens": total_tokens},
    }


def tool_call_payloads(step: ToolCalls, call_ids: itertools.count[int]) -> list[dict[str, Any]]:
    return [
        {
            "id": spec.call_id or f"call_{next(call_ids)}",
            "type": "function",
            "function": {"name": spec.name, "arguments": json.dumps(spec.args)},
        }
        for spec in step.calls
    ]


def message_and_finish(
    step: Reply | ToolCalls, call_ids: itertools.count[int]
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    if isinstance(step, Reply):
        return {"role": "assistant", "content": step.content}, step.finish_reason, []
    calls = tool_call_payloads(step, call_ids)
    message = {"role": "assistant", "content": step.content, "tool_calls": calls}
    return message, "tool_calls", calls


def usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    prompt = _approx_tokens(body.get("messages", []))
    completion_source = message.get("tool_calls") or message.get("content") or ""
    completion = _approx_tokens(completion_source)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion(
    body: dict[str, Any],
    step: Reply | ToolCalls,
    completion_id: str,
    call_ids: itertools.count[int],
) -> dict[str, Any]:
    """A whole (not streamed) chat completion of `step`."""
    message, finish_reason, _ = message_and_finish(step, call_ids)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": usage(body, message),
    }


def stream_chunks(
    body: dict[str, Any],
    step: Reply | ToolCalls,
    completion_id: str,
    call_ids: itertools.count[int],
) -> list[dict[str, Any]]:
    """The chunks of `step` streamed as the real API streams: a role chunk, the content word
    by word, each tool call as a header delta (id, name) and argument fragments, the
    finish reason, and the usage chunk if asked for (``[DONE]`` is not one of them)."""
    message, finish_reason, calls = message_and_finish(step, call_ids)
    created = int(time.time())
    model = body.get("model", "scripted")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    chunks.extend(chunk({"content": piece}) for piece in split_pieces(message["content"]))
    for index, call in enumerate(calls):
        function = call["function"]
        header = {**call, "function": {"name": function["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [{"index": index, **header}]}))
        chunks.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
            for fragment in _fragments(function["arguments"])
        )
    chunks.append(chunk({}, finish_reason))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = usage(body, message)
        chunks.append(usage_chunk)
    return chunks


def sse(payload: dict[str, Any] | None) -> bytes:
    """One server-sent event; None is the closing ``[DONE]``."""
    data = "[DONE]" if payload is None else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def delta_content(payload: dict[str, Any] | None) -> str:
    choices = (payload or {}).get("choices") or [{}]
    return choices[0].get("delta", {}).get("content") or ""


def _fragments(arguments: str, size: int = 8) -> list[str]:
    """JSON arguments cut into fragments, as the API streams a tool call's arguments."""
    return [arguments[start : start + size] for start in range(0, len(arguments), size)]


def split_pieces(content: str | None) -> list[str]:
    """Split content into a few word-boundary pieces so streaming consumers see several
    deltas that concatenate back to the exact original text."""
    if not content:
        return []
    return re.findall(r"\S+\s*|\s+", content)
