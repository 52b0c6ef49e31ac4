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
import contextlib
import inspect
import itertools
import json
import time
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from aiohttp import web

from core.models import openai_chat_model
from tests.support import openai_script
from tests.support.openai_payloads import (
    completion,
    delta_content,
    embeddings_body,
    error_response,
    split_pieces,
    sse,
    stream_chunks,
)
from tests.support.openai_script import (
    Delay,
    DropConnection,
    HttpError,
    RawBody,
    RecordedRequest,
    Reply,
    Respond,
    Step,
    StreamRecord,
    ToolCalls,
    empty_reply,
)

if TYPE_CHECKING:  # the client library loads when a test builds a client, not at collection
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings

__all__ = ["ScriptedOpenAI", *openai_script.__all__]

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
MODELS_PATH = "/v1/models"
TRANSCRIPTIONS_PATH = "/v1/audio/transcriptions"


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


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
            return error_response(HttpError(400, "embeddings request needs 'input'"))
        return web.json_response(embeddings_body(body, self.embedding_dim))

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
            return error_response(HttpError(400, "transcription needs 'file' and 'model'"))
        if not self._transcripts:
            self.unscripted.append(recorded)
            return error_response(HttpError(500, "transcription script exhausted"))
        step = self._transcripts.popleft()
        if isinstance(step, Delay):
            await self._sleep(step.seconds)
            step = step.then if step.then is not None else ""
        if isinstance(step, DropConnection):
            return await self._drop(request)
        if isinstance(step, HttpError):
            return error_response(step)
        if isinstance(step, RawBody):
            return web.Response(body=step.body, headers={"Content-Type": step.content_type})
        return web.json_response({"text": step})

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        body = recorded.json_body
        if not isinstance(body, dict):
            return error_response(HttpError(400, "request body must be a JSON object"))
        if not self._steps:
            self.unscripted.append(recorded)
            return error_response(HttpError(500, "script exhausted"))
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
            return error_response(HttpError(500, f"respond() callback failed: {exc!r}"))
        if isinstance(step, DropConnection):
            return await self._drop(request)
        if isinstance(step, HttpError):
            return error_response(step)
        if isinstance(step, Reply | ToolCalls):
            if body.get("stream"):
                return await self._stream(request, body, step)
            if isinstance(step, Reply) and step.pace_s:
                await self._sleep(step.pace_s * max(0, len(split_pieces(step.content)) - 1))
            return web.json_response(
                completion(body, step, f"chatcmpl-{next(self._ids)}", self._call_ids)
            )
        self.errors.append(TypeError(f"not a script step: {step!r}"))
        return error_response(HttpError(500, f"not a script step: {step!r}"))

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

    async def _stream(
        self, request: web.Request, body: dict[str, Any], step: Reply | ToolCalls
    ) -> web.StreamResponse:
        """Server-sent events as the real API streams them (`stream_chunks`), then
        ``[DONE]``; ``pace_s`` apart, each recorded in a `StreamRecord`."""
        chunks = stream_chunks(body, step, f"chatcmpl-{next(self._ids)}", self._call_ids)
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
                await response.write(sse(payload))
                record.chunk_times.append(time.monotonic())
                content = delta_content(payload)
                if content:
                    record.content_sent += content
                    if record.first_content_at is None:
                        record.first_content_at = record.chunk_times[-1]
            await response.write_eof()
        except ConnectionError:
            return response  # the client hung up mid-stream: the record says how far it got
        record.completed = True
        return response


def __getattr__(name: str) -> Any:
    """The script's steps, their constructors and the fake embeddings
    (`tests.support.openai_script`), which tests import from here with the server."""
    if name in openai_script.__all__:
        return getattr(openai_script, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
