"""A scripted, OpenAI-compatible HTTP server for tests.

Why this exists: mocking ``ChatOpenAI`` / ``OpenAIEmbeddings`` at the Python level hides the
bugs that matter in production -- how LangChain serialises ``tools``, ``tool_choice`` and
``response_format``, how the ``openai`` client maps HTTP failures to exceptions, how timeouts and
dropped connections surface.  Running the *real* clients against a tiny local server keeps those
code paths under test while the replies stay fully deterministic.

Usage::

    async with ScriptedOpenAI() as server:
        server.script(reply("hello"), tool_call("get_topics_content", {"ids": [1]}))
        llm = ChatOpenAI(base_url=server.base_url, api_key="test", model="scripted",
                         max_retries=0, timeout=2)
        ...
        assert server.chat_requests[0].json_body["messages"][0]["role"] == "system"
        assert not server.unscripted

Each chat request pops the next scripted step.  When the script is exhausted the server answers
HTTP 500 ("script exhausted") and records the request in :attr:`ScriptedOpenAI.unscripted`, so a
test can assert that nothing unexpected called the model.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import inspect
import itertools
import json
import math
import re
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias

from aiohttp import web

from core.models import openai_chat_model

if TYPE_CHECKING:  # the client library loads when a test builds a client, not at collection
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

__all__ = [
    "Delay",
    "DropConnection",
    "HttpError",
    "RecordedRequest",
    "Reply",
    "Respond",
    "ScriptedOpenAI",
    "Step",
    "StreamRecord",
    "ToolCallSpec",
    "ToolCalls",
    "delay",
    "drop_connection",
    "embed_text",
    "empty_reply",
    "http_error",
    "raw_content",
    "reply",
    "respond",
    "tool_call",
    "tool_calls",
]

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"

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

_WORD_RE = re.compile(r"\w+", re.UNICODE)


# --------------------------------------------------------------------------------------------
# Recorded traffic
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it.

    ``json_body`` is the decoded body exactly as the client sent it (``None`` for bodiless or
    non-JSON requests) so tests can assert on ``tools``, ``tool_choice``, ``response_format``,
    ``messages`` and so on without guessing how LangChain serialised them.
    """

    path: str
    json_body: Any
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    """`time.monotonic()` when the request was read."""
    form: dict[str, Any] = field(default_factory=dict)
    """A multipart request's fields: text fields as str, files as (file name, bytes)."""


@dataclass
class StreamRecord:
    """One streamed (server-sent events) reply as the server wrote it.

    Times are ``time.monotonic()`` just after each chunk was written to the socket, so a
    test can measure what a client did with the first token (``first_content_at``), and
    see whether the client hung up before the end (``completed`` false, ``chunks_sent``
    below ``chunks_total``)."""

    chunks_total: int
    chunk_times: list[float] = field(default_factory=list)
    first_content_at: float | None = None
    content_sent: str = ""
    completed: bool = False

    @property
    def chunks_sent(self) -> int:
        return len(self.chunk_times)


# --------------------------------------------------------------------------------------------
# Script steps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal assistant message (``finish_reason`` defaults to ``"stop"``).

    Streamed (``"stream": true``), the content goes out word by word, ``pace_s`` seconds
    apart, as a model writing at that speed would send it; not streamed, the whole reply
    comes after the same time, once the model would have written it all."""

    content: str
    finish_reason: str = "stop"
    pace_s: float = 0.0


@dataclass(frozen=True)
class ToolCallSpec:
    """One function call inside a :class:`ToolCalls` step.

    ``call_id`` of ``None`` lets the server assign a deterministic id (``call_1``, ``call_2``,
    ...), which keeps recorded follow-up requests stable across runs.
    """

    name: str
    args: dict[str, Any]
    call_id: str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """An assistant message carrying ``tool_calls`` (``finish_reason == "tool_calls"``).

    Streamed, each call goes out as the real API sends it: a first delta with the call's
    id and function name, then its JSON arguments in fragments, ``pace_s`` apart."""

    calls: tuple[ToolCallSpec, ...]
    content: str | None = None
    pace_s: float = 0.0


@dataclass(frozen=True)
class HttpError:
    """An OpenAI-style error body ``{"error": {...}}`` with the given HTTP status.

    ``retry_after`` (seconds) becomes a ``Retry-After`` header, as the real API sends on 429s.
    """

    status: int
    message: str = "scripted error"
    retry_after: float | None = None
    error_type: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class Delay:
    """Sleep ``seconds`` before answering with ``then`` -- used to trip client timeouts.

    The sleep is cut short when the server stops, so a test that times out never has to wait
    for the full delay during teardown.
    """

    seconds: float
    then: Step | None = None


@dataclass(frozen=True)
class RawBody:
    """A reply of any shape: these bytes with status 200 (a broken provider or proxy)."""

    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class DropConnection:
    """Close the TCP connection without sending any response bytes."""


@dataclass(frozen=True)
class Respond:
    """Compute the step from the request body at request time (for dynamic replies).

    ``fn`` receives the decoded JSON body and returns (or awaits to) any other step, including
    another :class:`Respond`.
    """

    fn: Callable[[dict[str, Any]], Step | Awaitable[Step]]


Step: TypeAlias = Reply | ToolCalls | HttpError | Delay | DropConnection | Respond


def reply(content: str, *, pace_s: float = 0.0) -> Reply:
    """A plain assistant reply with ``finish_reason="stop"`` and a usage block; streamed,
    its words go out ``pace_s`` seconds apart."""
    return Reply(content=content, pace_s=pace_s)


def raw_content(text: str) -> Reply:
    """Same as :func:`reply`; the name documents intent when ``text`` is deliberately malformed
    (e.g. broken JSON for a structured-output parser)."""
    return Reply(content=text)


def empty_reply() -> Reply:
    """An assistant message whose content is the empty string."""
    return Reply(content="")


def tool_call(
    name: str, args: dict[str, Any], call_id: str | None = None, *, pace_s: float = 0.0
) -> ToolCalls:
    """An assistant message with a single function call; ``args`` is JSON-encoded on the wire
    exactly as the OpenAI API does."""
    return ToolCalls(calls=(ToolCallSpec(name=name, args=args, call_id=call_id),), pace_s=pace_s)


def tool_calls(
    calls: Iterable[tuple[str, dict[str, Any]]], content: str | None = None
) -> ToolCalls:
    """An assistant message with several parallel function calls ``[(name, args), ...]``."""
    return ToolCalls(
        calls=tuple(ToolCallSpec(name=name, args=args) for name, args in calls),
        content=content,
    )


def http_error(
    status: int,
    message: str = "scripted error",
    retry_after: float | None = None,
    *,
    error_type: str | None = None,
    code: str | None = None,
) -> HttpError:
    """An error response; e.g. ``http_error(500)`` or ``http_error(429, retry_after=0.1)``."""
    return HttpError(
        status=status, message=message, retry_after=retry_after, error_type=error_type, code=code
    )


def delay(seconds: float, then: Step | None = None) -> Delay:
    """Wait ``seconds`` before answering with ``then`` (default: an empty reply)."""
    return Delay(seconds=seconds, then=then)


def drop_connection() -> DropConnection:
    """Close the connection without answering; clients see a connection error."""
    return DropConnection()


def respond(fn: Callable[[dict[str, Any]], Step | Awaitable[Step]]) -> Respond:
    """A dynamic step: ``fn(request_json)`` returns the step to play (sync or async)."""
    return Respond(fn=fn)


# --------------------------------------------------------------------------------------------
# Fake embeddings
# --------------------------------------------------------------------------------------------


def _tokens_of(item: Any) -> list[str]:
    """Words of one embeddings input.  Token-id arrays (what LangChain sends when
    ``check_embedding_ctx_length`` is on) are treated as words so they still embed sensibly."""
    if isinstance(item, str):
        return _WORD_RE.findall(item.lower())
    if isinstance(item, list):
        return [str(tok) for tok in item]
    return [json.dumps(item)]


def _embed_tokens(tokens: Sequence[str], dim: int) -> list[float]:
    """Signed feature hashing of a bag of words, L2-normalised.

    Signed hashing makes unrelated texts near-orthogonal in expectation while texts that share
    words get a positive cosine, which is what retrieval tests need.  ``blake2b`` (not
    ``hash()``) keeps vectors stable across processes regardless of ``PYTHONHASHSEED``.
    """
    vec = [0.0] * dim
    for token in tokens:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "big")
        index = value % dim
        sign = 1.0 if (value >> 63) & 1 else -1.0
        vec[index] += sign
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:
        # No words: return a fixed unit vector rather than zeros, which would make cosine
        # similarity undefined (NaN) in vector stores.
        vec[0] = 1.0
        return vec
    return [x / norm for x in vec]


def embed_text(text: str, dim: int = 16) -> list[float]:
    """The vector the server returns for ``text`` -- exposed so tests can compute expected
    similarities or pre-populate stores without an HTTP round trip."""
    return _embed_tokens(_tokens_of(text), dim)


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


def _approx_tokens(value: Any) -> int:
    """A rough token count (~4 characters per token), good enough for usage blocks."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return max(1, len(text) // 4) if text else 0


class ScriptedOpenAI:
    """An OpenAI-compatible server on ``127.0.0.1`` (ephemeral port) playing a script.

    Use as ``async with ScriptedOpenAI() as server:`` or via :meth:`start` / :meth:`stop`.
    Endpoints: ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models``,
    and ``POST /v1/audio/transcriptions`` (multipart ``file`` + ``model``), which answers
    from its own script (:meth:`script_transcripts`: a text, or an ``http_error`` /
    ``delay`` / ``drop_connection`` step).
    """

    def __init__(
        self,
        *,
        embedding_dim: int = 16,
        models: Sequence[str] = ("scripted", "scripted-embed"),
    ) -> None:
        self.embedding_dim = embedding_dim
        self.models: tuple[str, ...] = tuple(models)
        self.requests: list[RecordedRequest] = []
        self.unscripted: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.streams: list[StreamRecord] = []
        self._steps: deque[Step] = deque()
        self._transcripts: deque[str | HttpError | Delay | DropConnection | RawBody] = deque()
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> ScriptedOpenAI:
        """Bind the server; idempotent so fixtures can call it defensively."""
        if self._runner is not None:
            return self
        app = web.Application()
        app.router.add_post(CHAT_PATH, self._handle_chat)
        app.router.add_post(EMBEDDINGS_PATH, self._handle_embeddings)
        app.router.add_get(MODELS_PATH, self._handle_models)
        app.router.add_post(TRANSCRIPTIONS_PATH, self._handle_transcription)
        # A short shutdown timeout: in-flight delayed handlers are woken by ``_closing``, and a
        # test teardown must never hang on a connection the client already abandoned.
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        self._closing.clear()
        return self

    async def stop(self) -> None:
        """Wake any delayed handlers and shut the server down."""
        if self._runner is None:
            return
        self._closing.set()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> ScriptedOpenAI:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- public accessors ---------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only valid after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("ScriptedOpenAI is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """What to pass as ``base_url`` to ``ChatOpenAI`` / ``OpenAIEmbeddings``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def _client_options(self, model: str) -> dict[str, Any]:
        return {"base_url": self.base_url, "api_key": "test", "model": model}

    def chat_model(self, *, timeout: float = 5.0, max_retries: int = 0) -> ChatOpenAI:
        """The real `ChatOpenAI` client pointed at this server, made as the app makes it
        (`core.models.openai_chat_model`); retries are off by default so that every
        scripted step maps to exactly one HTTP request."""
        model = openai_chat_model("scripted", self.base_url, "test", timeout, max_retries)
        from langchain_openai import ChatOpenAI

        assert isinstance(model, ChatOpenAI)
        return model

    def embeddings_model(self, http_client: Any = None) -> OpenAIEmbeddings:
        """The real `OpenAIEmbeddings` client pointed at this server (model `scripted-embed`),
        on `http_client` if given (an `httpx.AsyncClient` the caller closes)."""
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            **self._client_options("scripted-embed"),
            check_embedding_ctx_length=False,
            http_async_client=http_client,
        )

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Recorded ``/v1/chat/completions`` requests, in arrival order."""
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """Recorded ``/v1/embeddings`` requests, in arrival order."""
        return [r for r in self.requests if r.path == EMBEDDINGS_PATH]

    @property
    def pending(self) -> int:
        """How many scripted chat steps have not been consumed yet."""
        return len(self._steps)

    def script(self, *steps: Step) -> ScriptedOpenAI:
        """Append steps to the chat script; returns ``self`` for chaining."""
        self._steps.extend(steps)
        return self

    def script_transcripts(
        self, *steps: str | HttpError | Delay | DropConnection | RawBody
    ) -> None:
        """Append replies of the transcription endpoint: a transcript text, or a failure."""
        self._transcripts.extend(steps)

    @property
    def transcription_requests(self) -> list[RecordedRequest]:
        """Recorded ``/v1/audio/transcriptions`` requests (their ``form``), in order."""
        return [r for r in self.requests if r.path == TRANSCRIPTIONS_PATH]

    def clear_script(self) -> None:
        """Drop any unconsumed steps."""
        self._steps.clear()

    # -- handlers ------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
        recorded = RecordedRequest(
            path=request.path, json_body=body, headers={k: v for k, v in request.headers.items()}
        )
        self.requests.append(recorded)
        return recorded

    async def _handle_models(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        data = [
            {"id": model, "object": "model", "created": 0, "owned_by": "scripted"}
            for model in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _handle_embeddings(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        body = recorded.json_body
        if not isinstance(body, dict) or "input" not in body:
            return self._error_response(HttpError(400, "embeddings request needs 'input'"))
        inputs = body["input"]
        # A single string, or a single token array, is one input; anything else is a batch.
        if isinstance(inputs, str) or (
            isinstance(inputs, list) and inputs and all(isinstance(x, int) for x in inputs)
        ):
            inputs = [inputs]
        dim = int(body.get("dimensions") or self.embedding_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data: list[dict[str, Any]] = []
        total_tokens = 0
        for index, item in enumerate(inputs):
            tokens = _tokens_of(item)
            total_tokens += len(tokens)
            vector = _embed_tokens(tokens, dim)
            embedding: Any = vector
            if as_base64:
                # The openai client asks for base64 by default and decodes little-endian float32.
                packed = struct.pack(f"<{len(vector)}f", *vector)
                embedding = base64.b64encode(packed).decode("ascii")
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "scripted-embed"),
                "usage": {"prompt_tokens": total_tokens, "total_tokens": total_tokens},
            }
        )

    async def _handle_transcription(self, request: web.Request) -> web.StreamResponse:
        form: dict[str, Any] = {}
        async for part in await request.multipart():
            data = await part.read()
            form[part.name] = (part.filename, bytes(data)) if part.filename else data.decode()
        recorded = RecordedRequest(
            path=request.path, json_body=None, headers=dict(request.headers.items()), form=form
        )
        self.requests.append(recorded)
        if "file" not in form or "model" not in form:
            return self._error_response(HttpError(400, "transcription needs 'file' and 'model'"))
        if not self._transcripts:
            self.unscripted.append(recorded)
            return self._error_response(HttpError(500, "transcription script exhausted"))
        step = self._transcripts.popleft()
        if isinstance(step, Delay):
            await self._sleep(step.seconds)
            step = step.then if step.then is not None else ""
        if isinstance(step, DropConnection):
            return await self._drop(request)
        if isinstance(step, HttpError):
            return self._error_response(step)
        if isinstance(step, RawBody):
            return web.Response(body=step.body, headers={"Content-Type": step.content_type})
        return web.json_response({"text": step})

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        body = recorded.json_body
        if not isinstance(body, dict):
            return self._error_response(HttpError(400, "request body must be a JSON object"))
        if not self._steps:
            self.unscripted.append(recorded)
            return self._error_response(HttpError(500, "script exhausted"))
        step: Step | None = self._steps.popleft()
        try:
            while True:
                if isinstance(step, Respond):
                    produced = step.fn(body)
                    step = await produced if inspect.isawaitable(produced) else produced
                elif isinstance(step, Delay):
                    await self._sleep(step.seconds)
                    step = step.then if step.then is not None else empty_reply()
                else:
                    break
        except Exception as exc:  # a bug in a respond() callback must surface, not hang
            self.errors.append(exc)
            return self._error_response(HttpError(500, f"respond() callback failed: {exc!r}"))
        if isinstance(step, DropConnection):
            return await self._drop(request)
        if isinstance(step, HttpError):
            return self._error_response(step)
        if isinstance(step, Reply | ToolCalls):
            if body.get("stream"):
                return await self._stream(request, body, step)
            if isinstance(step, Reply) and step.pace_s:
                await self._sleep(step.pace_s * max(0, len(_split_pieces(step.content)) - 1))
            return web.json_response(self._completion(body, step))
        self.errors.append(TypeError(f"not a script step: {step!r}"))
        return self._error_response(HttpError(500, f"not a script step: {step!r}"))

    # -- helpers -------------------------------------------------------------------------------

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but return early when the server is stopping (keeps teardown fast)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)

    async def _drop(self, request: web.Request) -> web.StreamResponse:
        """Close the socket without writing a byte; the client sees a disconnect."""
        transport = request.transport
        if transport is not None:
            transport.abort()
        # aiohttp needs a response object, but writing it onto the aborted transport raises a
        # ConnectionError that aiohttp swallows quietly (raising here instead would be logged
        # as a handler crash).
        return web.Response(status=500, text="connection dropped")

    def _error_response(self, error: HttpError) -> web.Response:
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

    def _tool_call_payloads(self, step: ToolCalls) -> list[dict[str, Any]]:
        return [
            {
                "id": spec.call_id or f"call_{next(self._call_ids)}",
                "type": "function",
                "function": {"name": spec.name, "arguments": json.dumps(spec.args)},
            }
            for spec in step.calls
        ]

    def _message_and_finish(
        self, step: Reply | ToolCalls
    ) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
        if isinstance(step, Reply):
            return {"role": "assistant", "content": step.content}, step.finish_reason, []
        calls = self._tool_call_payloads(step)
        message = {"role": "assistant", "content": step.content, "tool_calls": calls}
        return message, "tool_calls", calls

    @staticmethod
    def _usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
        prompt = _approx_tokens(body.get("messages", []))
        completion_source = message.get("tool_calls") or message.get("content") or ""
        completion = _approx_tokens(completion_source)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _completion(self, body: dict[str, Any], step: Reply | ToolCalls) -> dict[str, Any]:
        message, finish_reason, _ = self._message_and_finish(step)
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
            ],
            "usage": self._usage(body, message),
        }

    async def _stream(
        self, request: web.Request, body: dict[str, Any], step: Reply | ToolCalls
    ) -> web.StreamResponse:
        """Server-sent events as the real API streams: a role chunk, the content word by
        word, each tool call as a header delta (id, name) and argument fragments, the
        finish reason, the usage chunk if asked for, then ``[DONE]``; ``pace_s`` apart."""
        message, finish_reason, calls = self._message_and_finish(step)
        completion_id = f"chatcmpl-{next(self._ids)}"
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
        chunks.extend(chunk({"content": piece}) for piece in _split_pieces(message["content"]))
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
            usage_chunk["usage"] = self._usage(body, message)
            chunks.append(usage_chunk)

        record = StreamRecord(chunks_total=len(chunks) + 1)
        self.streams.append(record)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        try:
            for index, payload in enumerate([*chunks, None]):
                if index > 1 and step.pace_s:
                    await self._sleep(step.pace_s)
                await response.write(_sse(payload))
                record.chunk_times.append(time.monotonic())
                content = _delta_content(payload)
                if content:
                    record.content_sent += content
                    if record.first_content_at is None:
                        record.first_content_at = record.chunk_times[-1]
            await response.write_eof()
        except ConnectionError:
            return response  # the client hung up mid-stream: the record says how far it got
        record.completed = True
        return response


def _sse(payload: dict[str, Any] | None) -> bytes:
    """One server-sent event; None is the closing ``[DONE]``."""
    data = "[DONE]" if payload is None else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def _delta_content(payload: dict[str, Any] | None) -> str:
    choices = (payload or {}).get("choices") or [{}]
    return choices[0].get("delta", {}).get("content") or ""


def _fragments(arguments: str, size: int = 8) -> list[str]:
    """JSON arguments cut into fragments, as the API streams a tool call's arguments."""
    return [arguments[start : start + size] for start in range(0, len(arguments), size)]


def _split_pieces(content: str | None) -> list[str]:
    """Split content into a few word-boundary pieces so streaming consumers see several
    deltas that concatenate back to the exact original text."""
    if not content:
        return []
    return re.findall(r"\S+\s*|\s+", content)
