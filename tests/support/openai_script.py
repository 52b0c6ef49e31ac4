"""What a test scripts the scripted OpenAI-compatible server with and reads back from it
(`tests.support.openai_server`): the recorded requests and streams, the script's steps and
their constructors, and the fake embeddings (signed feature hashing)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # the client library loads when a test builds a client, not at collection
    pass


__all__ = [
    "Delay",
    "DropConnection",
    "HttpError",
    "RawBody",
    "RecordedRequest",
    "Reply",
    "Respond",
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


def tokens_of(item: Any) -> list[str]:
    """Words of one embeddings input.  Token-id arrays (what LangChain sends when
    ``check_embedding_ctx_length`` is on) are treated as words so they still embed sensibly."""
    if isinstance(item, str):
        return _WORD_RE.findall(item.lower())
    if isinstance(item, list):
        return [str(tok) for tok in item]
    return [json.dumps(item)]


def embed_tokens(tokens: Sequence[str], dim: int) -> list[float]:
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
    return embed_tokens(tokens_of(text), dim)
