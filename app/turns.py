"""Running user turns: `topica ask` (one turn) and `topica chat` (a terminal session).

A turn stores the user's message first, so nothing the user said is lost whatever
happens next; the response graph then answers and stores the answer. The chat loop
runs the memory graph after every turn; its triggers decide whether anything is
archived yet.

A caller that wants the answer while it is written passes `on_text`: the graph then runs
with LangGraph's own streaming (`stream_mode="messages"`), and every chunk the responder's
model sends (in the tool loop and the synthesis turn alike) calls it with the answer's
text so far. A memory-only answer has no model behind it and arrives whole.

A turn has a deadline (`TOPICA_TURN_DEADLINE_S`, `app.deadline`): the user gets what was
recalled with a note that the model did not answer in time before it, never silence.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypedDict, TypeVar, Unpack
from uuid import uuid4

from langchain_core.messages import AIMessageChunk
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from app.deadline import Progress, retrieved, within_deadline
from app.views import turn_result, unread_turn_result
from core.callbacks import LLMUsage
from core.context import ResponseContext, TaskContext
from core.deps import Deps
from core.records import MessageRow, NewMessage, parse_timestamp
from core.text import valid_text
from core.tracing import run_config, traced, user_key
from graphs.response import build_response_graph
from nodes.shared.questions import store_user_message

T = TypeVar("T")

OnText = Callable[[str], Awaitable[None] | None]
"""Called with the answer's text so far, each time the responder's model adds to it."""

ANSWER_NODES = frozenset({"respond", "synthesize"})
"""The nodes whose model writes the answer (the other agents' tokens are not the answer)."""

NEW_SEGMENT_COMMAND = "/new"
QUIT_COMMAND = "/quit"
NEW_SEGMENT_REPLY = "Started a new conversation. / Начат новый разговор."
HELP_COMMAND = "/help"
QUIT_ALIASES = (QUIT_COMMAND, "/exit")
CHAT_HELP = (
    "/new: start a new conversation; /quit (or Ctrl-D): end the session; /help: this list. "
    "Anything else is a message to remember and answer.\n"
    "/new: начать новый разговор; /quit (или Ctrl-D): закончить; /help: этот список. "
    "Всё остальное: сообщение, которое запоминается и получает ответ."
)


def unknown_command_reply(text: str) -> str:
    return (
        f"Unknown command {text}; /help lists the commands. / "
        f"Неизвестная команда {text}; /help: список команд."
    )


def is_command(text: str) -> bool:
    """A line that is one `/word` is control, never a message (nothing stored)."""
    return text.startswith("/") and len(text) > 1 and text[1:].isalpha()


def compile_response_graph(
    deps: Deps, checkpointer: BaseCheckpointSaver | None = None
) -> CompiledStateGraph:
    return build_response_graph(deps).compile(checkpointer=checkpointer, name="response")


@dataclass(frozen=True, kw_only=True)
class TurnRequest:
    """One turn over stored messages.

    `rows` are the messages it answers, oldest first: the turn answers the last one (its
    external id is also the turn's id, opened in `deps.stops` so the answer can be stopped
    while `on_text` streams it); the earlier ones are inside `text` (`turn_text`), so the
    context shows them only there. `parts` are the media as LangChain content blocks,
    which the responder sees with the text."""

    user_id: int
    rows: Sequence[MessageRow]
    text: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    on_text: OnText | None = None
    now_iso: str | None = None
    started: float | None = None
    """When the user's wait began (`time.monotonic()`); the deadline counts from it."""


Turn = Callable[[TurnRequest], Awaitable[dict[str, Any]]]
"""Runs one turn; `answer_stored`'s result."""


def turn_text(rows: Sequence[MessageRow], blocks: Mapping[str, str] | None = None) -> str:
    """What a turn answers: each message's block (`blocks`, by external id: its text with
    what its media said) or else its stored text, oldest first."""
    blocks = blocks or {}
    pieces = (blocks.get(row["external_id"], row["content"]) for row in rows)
    return "\n\n".join(piece for piece in pieces if piece)


def make_turn(deps: Deps, checkpointer: BaseCheckpointSaver | None = None) -> Turn:
    """The response graph compiled once (not per turn), answering each request."""
    graph = compile_response_graph(deps, checkpointer)

    async def turn(request: TurnRequest) -> dict[str, Any]:
        return await answer_stored(graph, deps, request)

    return turn


@traced("turn")
async def answer_stored(
    graph: CompiledStateGraph, deps: Deps, request: TurnRequest
) -> dict[str, Any]:
    """Run the compiled response graph on a request's stored messages; the turn's result.
    The memory-only path, having no model, works from the text alone."""
    user_id, external_id, on_text = (
        request.user_id,
        request.rows[-1]["external_id"],
        request.on_text,
    )
    started = time.monotonic() if request.started is None else request.started
    text = valid_text(request.text)  # as the store keeps it: the checkpointer must take it too
    usage = LLMUsage()
    config = run_config("response", user_id)
    # One thread per turn (its messages channel must not pile up across turns), named
    # after the user's pseudonym and a digest of the message id, never the raw ids.
    turn = hashlib.sha256(external_id.encode()).hexdigest()[:16]
    config["configurable"]["thread_id"] = f"response-{user_key(user_id)}-{turn}"
    config["callbacks"] = [*config["callbacks"], usage]
    context = ResponseContext.from_settings(
        deps.settings, user_id=user_id, now_iso=request.now_iso, turn_id=external_id
    )
    turn_input: dict[str, Any] = {"text": text, "message_id": request.rows[-1]["id"]}
    if request.parts:
        turn_input["parts"] = request.parts
    if len(request.rows) > 1:
        turn_input["group_message_ids"] = [row["id"] for row in request.rows[:-1]]
    progress = Progress()
    run = progress.follow(turn_states(graph, turn_input, config, context, on_text))
    state = await within_deadline(deps, run, progress, turn_input, config, context, started)
    return await read_result(deps, user_id, state, usage.calls, started)


async def read_result(
    deps: Deps, user_id: int, state: dict[str, Any], llm_calls: int, started: float
) -> dict[str, Any]:
    """The turn's result (`turn_result`). Past the deadline, or with the answer sent while
    its store still waits (a held lock would hold the reads as well), it is read in what
    is left of the deadline, else taken from the state alone (`unread_turn_result`)."""
    reading = asyncio.ensure_future(asyncio.to_thread(turn_result, deps, user_id, state, llm_calls))
    store_pending = bool(state.get("answer")) and state.get("answer_message_id", 0) is None
    late = bool(state.get("deadline_exceeded"))
    if not (late or store_pending):
        return await reading
    left_s = deps.settings.turn_deadline_s - (time.monotonic() - started)
    done, _ = await asyncio.wait({reading}, timeout=max(left_s, 0))
    if not done:
        reading.add_done_callback(retrieved)
    result = reading.result() if done else unread_turn_result(state, llm_calls)
    return {**result, "deadline_exceeded": True} if late else result


class AnswerText:
    """The answer being written, from the responder's streamed chunks: the text of its
    latest model call (a call after a tool round starts the text over)."""

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.text = ""

    def add(self, chunk: AIMessageChunk) -> bool:
        """Take one chunk; whether it added to the text."""
        if chunk.id != self.call_id:
            self.call_id, self.text = chunk.id, ""
        piece = valid_text(chunk.text)
        self.text += piece
        return bool(piece)


async def turn_states(
    graph: CompiledStateGraph,
    turn_input: dict[str, Any],
    config: dict[str, Any],
    context: ResponseContext | TaskContext,
    on_text: OnText | None,
    answer_nodes: frozenset[str] = ANSWER_NODES,
) -> AsyncIterator[dict[str, Any]]:
    """Run the graph with LangGraph's streaming, yielding each full state it reaches and
    telling `on_text` (if any) of the answer's growth: the text its `answer_nodes`' model
    is writing (a task run's streams the same way, `app.scheduling`)."""
    answer = AnswerText()
    modes = ["values"] if on_text is None else ["messages", "values"]
    async for mode, payload in graph.astream(
        turn_input, config, context=context, stream_mode=modes
    ):
        if mode == "values":
            yield payload
            continue
        chunk, metadata = payload
        if (
            on_text is not None
            and isinstance(chunk, AIMessageChunk)
            and metadata.get("langgraph_node") in answer_nodes
            and answer.add(chunk)
        ):
            await _resolved(on_text(answer.text))


class TurnOptions(TypedDict, total=False):
    """What a command-line turn may set: its moment, the message's external id (a fresh
    `turn-…` id if None), its media parts, and `on_text` to see the answer while written."""

    now_iso: str | None
    external_id: str | None
    parts: list[dict[str, Any]] | None
    on_text: OnText | None


async def answer_turn(
    graph: CompiledStateGraph, deps: Deps, user_id: int, text: str, **options: Unpack[TurnOptions]
) -> dict[str, Any]:
    """Store the message, then answer it with the compiled response graph."""
    started = time.monotonic()  # storing the message is part of the user's wait
    now_iso = options.get("now_iso")
    stamp = (parse_timestamp(now_iso) if now_iso else datetime.now(UTC)).isoformat(
        timespec="seconds"
    )
    message = NewMessage(
        external_id=options.get("external_id") or f"turn-{uuid4().hex}",
        role="user",
        content=text,
        created_at=stamp,
    )
    stored = await asyncio.to_thread(store_user_message, deps, user_id, message)
    request = TurnRequest(
        user_id=user_id, rows=[stored.row], text=text, parts=options.get("parts") or [],
        on_text=options.get("on_text"), now_iso=stamp, started=started,
    )  # fmt: skip
    return await answer_stored(graph, deps, request)


async def run_turn(
    deps: Deps,
    user_id: int,
    text: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    **options: Unpack[TurnOptions],
) -> dict[str, Any]:
    """One turn: `{"answer", "topics", "people", "facts", "fallback", "context_tokens",
    "llm_calls", ...}` (`app.views.turn_result`; `"deadline_exceeded": True` added when the
    turn ran past `TOPICA_TURN_DEADLINE_S` and was answered from memory). With a
    checkpointer, the run is checkpointed on a thread of its own."""
    graph = compile_response_graph(deps, checkpointer)
    return await answer_turn(graph, deps, user_id, text, **options)


async def _resolved(value: T | Awaitable[T]) -> T:
    """Callers may hand in plain or async callables."""
    return await value if inspect.isawaitable(value) else value


async def chat_session(
    deps: Deps,
    user_id: int,
    read_line: Callable[[], str | Awaitable[str | None] | None],
    write: Callable[[str], Awaitable[None] | None],
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    on_text: Callable[[], OnText] | None = None,
) -> None:
    """An interactive conversation: one turn per line until `/quit` or end of input.

    `read_line` returns the next line, or None at the end of input; blank lines are
    skipped. `/new` starts a new conversation segment, `/help` lists the commands; any
    other `/word` is answered as an unknown command; commands are never stored. After
    every answer the memory graph runs with its ordinary triggers (inactivity, size), as
    the bot's worker does.
    With `on_text` (a factory: a fresh callback per turn) each answer streams into the
    callback while it is written, and `write` gets the whole answer after.
    """
    from app.memory import archive_user  # the memory graph: `topica ask` never needs it

    graph = compile_response_graph(deps, checkpointer)
    while True:
        line = await _resolved(read_line())
        if line is None:
            return
        text = line.strip()
        if not text:
            continue
        if text in QUIT_ALIASES:
            return
        if text == NEW_SEGMENT_COMMAND:
            await asyncio.to_thread(deps.store.sessions.start_new_segment, user_id)
            await _resolved(write(NEW_SEGMENT_REPLY))
            continue
        if is_command(text):
            reply = CHAT_HELP if text == HELP_COMMAND else unknown_command_reply(text)
            await _resolved(write(reply))
            continue
        result = await answer_turn(
            graph, deps, user_id, text, on_text=on_text() if on_text else None
        )
        await _resolved(write(result["answer"]))
        await archive_user(deps, user_id, checkpointer=checkpointer)
