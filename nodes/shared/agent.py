"""One helper for every agent call: the model's reply, or a typed fallback.

Each LLM node asks `call_agent` and gets back either an `AgentReply` (the model's message
and what was parsed from it) or an `AgentFallback` (the reason and a short detail), never
an exception for a provider's or a model's failure. The node then routes with `Command`
to its non-LLM path on a labelled edge, with the reason in state (STYLE 16). The failure
is logged here, once, with the user's pseudonym.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any, Generic, TypeVar

import httpx
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import ensure_config, merge_configs
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from core.fallbacks import AgentFallback
from core.models import ModelRegistry
from core.records import ID_RANGE
from core.settings import AgentName
from core.state import Repair
from core.text import clip, valid_value
from core.tracing import user_key
from nodes.shared.endpoint import JSON_MODE as JSON_MODE
from nodes.shared.endpoint import (
    arguments_request,
    bind_forced,
    force_mechanism,
    json_format,
    repair_tool_call,
    token_limit,
)
from nodes.shared.ledger import LEDGER as LEDGER
from nodes.shared.ledger import AgentCall as AgentCall
from nodes.shared.structured import (
    EmptyReplyError,
    LLMOutputError,
    message_text,
    needs_mending,
    parse_json_reply,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
SchemaT = TypeVar("SchemaT", bound=BaseModel)

ERROR_DETAIL_CHARS = 200
ARGUMENTS_AS_JSON = frozenset({"json_schema", "json_object", "prompt"})
"""Forcing mechanisms that ask for the call's arguments as the reply's text."""


@dataclass(frozen=True)
class AgentReply(Generic[T]):
    message: AIMessage
    value: T
    stopped: bool = False
    """The caller's stop event cut the reply short: `message` is what was written by then."""
    repairs: tuple[str, ...] = ()
    """What was set right in a reply of the wrong shape (`core.state.Repair`'s kinds)."""


def describe(error: BaseException) -> str:
    """`TypeName: message`, the message clipped for a log line."""
    return f"{type(error).__name__}: {clip(str(error), ERROR_DETAIL_CHARS)}"


def is_timeout(error: BaseException) -> bool:
    # The OpenAI client is imported only where a model is configured (0.8 s at start);
    # an `openai` error can exist only once it is, so it is looked up, never imported here.
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(error, openai.APITimeoutError):
        return True
    return isinstance(error, TimeoutError | httpx.TimeoutException)


def is_cut_short(error: BaseException) -> bool:
    """The reply reached its token limit before its JSON was complete (the OpenAI client
    refuses to parse it)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(error, openai.LengthFinishReasonError)


def provider_fallback(error: BaseException) -> AgentFallback:
    """The typed reason of a call that raised: a reply cut at its token limit is output
    of the wrong shape, the rest the provider's failure or a timeout."""
    if is_cut_short(error):
        return AgentFallback("invalid_output", "the reply reached its token limit unfinished")
    return AgentFallback("timeout" if is_timeout(error) else "api_error", describe(error))


def text_of(reply: AIMessage) -> str:
    """The reply's text, stripped; raises `EmptyReplyError` when there is none."""
    text = message_text(reply).strip()
    if not text:
        raise EmptyReplyError("empty reply")
    return text


def _within_64_bits(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value in ID_RANGE else str(value)
    if isinstance(value, dict):
        return {key: _within_64_bits(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_within_64_bits(item) for item in value]
    return value


def checkpointable(reply: AIMessage) -> AIMessage:
    """The reply with each integer of its tool calls' arguments past 64 bits written as a
    string: a checkpoint (msgpack) cannot hold such an integer, so an id a model made up
    would crash the turn. The tool then refuses it like any unknown id."""
    if not reply.tool_calls:
        return reply
    calls = [{**call, "args": _within_64_bits(call["args"])} for call in reply.tool_calls]
    return reply if calls == reply.tool_calls else reply.model_copy(update={"tool_calls": calls})


REPLY_FIELDS = ("content", "tool_calls", "invalid_tool_calls", "additional_kwargs")


def valid_reply(reply: AIMessage) -> AIMessage:
    """The reply with every string in its text and tool calls made valid (`valid_text`):
    where a model's output enters Topica, so nothing downstream (drafts, splitting, the
    stores, Chroma, logs) meets a lone surrogate."""
    changed = {}
    for name in REPLY_FIELDS:
        value = getattr(reply, name)
        valid = valid_value(value)
        if valid != value:
            changed[name] = valid
    return reply.model_copy(update=changed) if changed else reply


CHARS_PER_TOKEN_BOUND = 16
"""A reply's text is cut past this many characters per token of the agent's `max_tokens`:
far more than any tokenizer's average, so only a model that ignores the token limit (a
broken or hostile endpoint) meets it."""


def within_bound(reply: AIMessage, max_chars: int) -> tuple[AIMessage, bool]:
    """The reply with its text cut at `max_chars`, and whether it was cut."""
    if not isinstance(reply.content, str) or len(reply.content) <= max_chars:
        return reply, False
    return reply.model_copy(update={"content": reply.content[:max_chars]}), True


Request = Sequence[BaseMessage] | Callable[[], Awaitable[Sequence[BaseMessage]]]
"""The messages to send, or an async function building them (only called when the agent
has a model, so the non-LLM path never pays for reading its material)."""


async def call_agent(
    models: ModelRegistry,
    agent: AgentName,
    request: Request,
    *,
    user_id: int,
    parse: Callable[[AIMessage], T] = text_of,
    bind: Callable[[BaseChatModel], Runnable] | None = None,
    timeout_s: float | None = None,
    stop: asyncio.Event | None = None,
    force_tool: BaseTool | None = None,
    mended: Callable[[AIMessage], bool] = lambda reply: False,
) -> AgentReply[T] | AgentFallback:
    """Ask `agent`'s model; `bind` prepares it (tools, response format), `parse` reads the
    reply (raising `LLMOutputError` for an unusable one). `timeout_s` bounds the call; the
    reply's tokens are bounded by the agent's `max_tokens` setting, asked of the endpoint
    and enforced here (`CHARS_PER_TOKEN_BOUND`): a longer reply is cut and counts as
    stopped.

    With `force_tool` (instead of `bind`) the model must call that tool, asked for by the
    strongest mechanism the endpoint honours; a call written as content is repaired into
    a tool call (`AgentReply.repairs`), a reply without one is returned as it is for the
    caller to refuse. Every outcome is recorded in `LEDGER`.

    A reply cut at the token limit yet parsed is `truncated`; one that `mended` says
    needed mending to parse, `json_repaired`.

    With a `stop` event the reply is read as a stream and cut short when the event is set
    (see `stream_reply`)."""
    model = models.get(agent)
    if model is None:
        return AgentFallback("no_model")
    settings = models.settings
    mechanism = force_mechanism(settings) if force_tool is not None else None
    if force_tool is not None and mechanism is not None:
        runnable = bind_forced(model, force_tool, mechanism)
    else:
        runnable = bind(model) if bind is not None else model
    runnable = runnable.bind(**token_limit(settings, agent))
    messages = list(await request() if callable(request) else request)
    if force_tool is not None and mechanism in ARGUMENTS_AS_JSON:
        messages = arguments_request(force_tool, messages)
    started = time.monotonic()
    reply: AIMessage | None = None
    max_chars = settings.max_tokens_for(agent) * CHARS_PER_TOKEN_BOUND
    try:
        if stop is None:
            reply, stopped = await asyncio.wait_for(runnable.ainvoke(messages), timeout_s), False
        else:
            reply, stopped = await asyncio.wait_for(
                stream_reply(runnable, messages, stop, max_chars), timeout_s
            )
        reply, cut = within_bound(reply, max_chars)
        stopped = stopped or cut
        reply, outcome, repaired = forced_outcome(
            checkpointable(valid_reply(reply)), force_tool, mechanism
        )
        value = parse(reply)
        repairs = (
            *([repaired] if repaired else []),
            *(["json_repaired"] if mended(reply) else []),
            *(["truncated"] if reply.response_metadata.get("finish_reason") == "length" else []),
        )
        if repairs:
            outcome = "repaired"
            log.info("user %s: %s reply repaired: %s", user_key(user_id), agent, repairs)
        LEDGER.record(agent, outcome, reply, started, repairs)
        return AgentReply(reply, value, stopped, repairs)
    except LLMOutputError as error:
        reason = "empty_reply" if isinstance(error, EmptyReplyError) else "invalid_output"
        fallback = AgentFallback(reason, clip(str(error), ERROR_DETAIL_CHARS))
    except Exception as error:  # any provider failure becomes the agent's fallback edge
        fallback = provider_fallback(error)
    log.warning("user %s: %s fell back: %s", user_key(user_id), agent, fallback)
    LEDGER.record(agent, fallback.reason, reply, started)
    return fallback


def forced_outcome(
    reply: AIMessage, tool: BaseTool | None, mechanism: str | None
) -> tuple[AIMessage, str, str | None]:
    """The reply (a call written as content read back into a tool call), its outcome for
    the ledger, and what was repaired: a forced call missing is `invalid_output`."""
    if tool is None:
        return reply, "accepted", None
    fixed = repair_tool_call(tool, reply)
    if fixed is not None:
        repaired = None if mechanism in ARGUMENTS_AS_JSON else "tool_call_in_content"
        return fixed, "repaired" if repaired else "accepted", repaired
    called = any(call["name"] == tool.name for call in reply.tool_calls)
    return reply, "accepted" if called else "invalid_output", None


CANCEL_AGAIN_S = 0.05
"""How long a cancelled stream reader may take to end before it is cancelled again."""


async def stream_reply(
    runnable: Runnable,
    messages: Sequence[BaseMessage],
    stop: asyncio.Event,
    max_chars: int | None = None,
) -> tuple[AIMessage, bool]:
    """The reply read as a stream, and whether `stop` or `max_chars` cut it short.

    When `stop` is set the stream is closed at once (the provider stops generating on the
    closed connection) and the reply is the text written so far, without any half-written
    tool call: every token reported to the run's callbacks, so nothing the user may have
    seen in LangGraph's `messages` stream is missing from it. Past `max_chars` of text the
    stream is closed the same way, whatever rate the tokens come at."""
    if stop.is_set():
        return AIMessage(""), True
    chunks: list[AIMessageChunk] = []
    written = WrittenSoFar()
    config = merge_configs(ensure_config(), {"callbacks": [written]})

    async def read() -> str | None:
        # Closed explicitly: a cancelled reader would otherwise leave the stream (and the
        # provider's connection) open until the garbage collector finds it. `stop` is
        # checked at every chunk too: a cancellation that arrives while the request is
        # being set up can be lost under `astream`, and the reader would read on to the
        # end of the stream.
        length = 0
        async with contextlib.aclosing(runnable.astream(messages, config)) as stream:
            async for chunk in stream:
                chunks.append(chunk)
                length += len(chunk.text)
                if stop.is_set():
                    return "stopped"
                if max_chars is not None and length > max_chars:
                    return "too long"
        return None

    reading = asyncio.ensure_future(read())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        await end_reading(reading)
    if reading.cancelled() or reading.result() == "stopped":  # a provider failure raises
        return AIMessage(written.text), True
    if reading.result() == "too long":
        return AIMessage(written.text[:max_chars]), True
    whole = reduce(operator.add, chunks) if chunks else AIMessageChunk("")
    return message_chunk_to_message(whole), False


async def end_reading(reading: asyncio.Future[Any]) -> None:
    """Cancel `reading` until it has ended: a cancellation it swallowed is sent again, so
    the stream's reader never outlives the stop (nor a cancelled turn, whose own
    cancellation is not caught here)."""
    while not reading.done():
        reading.cancel()
        await asyncio.wait({reading}, timeout=CANCEL_AGAIN_S)


class WrittenSoFar(BaseCallbackHandler):
    """The text of a streamed reply as its tokens were reported: what LangGraph's `messages`
    stream, and so the user, may have seen already, even of a chunk the reader never got."""

    run_inline = True

    def __init__(self) -> None:
        self.text = ""

    def on_llm_new_token(self, token: str, *, chunk: Any = None, **kwargs: Any) -> None:
        self.text += chunk.message.text if chunk is not None else token


def repairs_of(agent: AgentName, result: AgentReply[Any] | AgentFallback) -> list[Repair]:
    """What was set right in `result`, one `Repair` per kind (none for a fallback)."""
    if isinstance(result, AgentFallback):
        return []
    return [Repair(agent=agent, repaired=kind) for kind in result.repairs]


def repairs_update(agent: AgentName, result: AgentReply[Any] | AgentFallback) -> dict[str, Any]:
    """The state update recording what was set right in `result`: `{"repairs": [...]}`, or
    nothing when nothing was."""
    repairs = repairs_of(agent, result)
    return {"repairs": repairs} if repairs else {}


async def call_agent_json(
    models: ModelRegistry,
    agent: AgentName,
    request: Request,
    schema: type[SchemaT],
    *,
    user_id: int,
) -> AgentReply[SchemaT] | AgentFallback:
    """`call_agent` asking for JSON (a schema, JSON mode or the prompt alone, as the
    endpoint honours), the reply validated against `schema`."""
    response_format = json_format(models.settings, agent, schema)
    return await call_agent(
        models,
        agent,
        request,
        user_id=user_id,
        parse=lambda reply: parse_json_reply(message_text(reply), schema),
        mended=lambda reply: needs_mending(message_text(reply)),
        bind=lambda model: (
            model if response_format is None else model.bind(response_format=response_format)
        ),
    )
