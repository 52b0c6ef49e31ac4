"""The rolling summary of a long session (seed 003): what has left the sliding window.

The summary covers the current segment's unarchived messages older than the window and
is stored per segment with the range of messages it covers. It is rewritten when
`summary_refresh_messages` more messages have left the window since it was written, or
when archiving took messages from its start. The Summariser agent folds the new messages
into the previous summary (`summarise`); without a model, or when it fails, the graph
takes the `extractive_summary` edge: the user's own messages, newest kept first when
they do not all fit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from core.context import ResponseContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.ports import Store
from core.records import MEMORY_KIND, MessageRow, SessionSummaryRow
from core.state import ResponseState
from core.text import clip, neutralize, short_time, transcript
from nodes.shared.agent import call_agent, repairs_update
from nodes.shared.budget import CHARS_PER_TOKEN
from prompts import summariser as prompt

SUMMARISER_INPUT_CHARS = 24_000
EXTRACTIVE_LINE_CHARS = 200
WORDS_PER_TOKEN = 0.6


@dataclass(frozen=True)
class SessionView:
    """The current segment (since the last `/new`) as this turn sees it.

    The session is the segment's unarchived part: its newest messages are the window,
    the ones before it are what the rolling summary covers. Archived messages are
    long-term memory, recalled as topics (seed 002).
    """

    segment: int
    history_size: int
    """How many messages the segment held before the current one, counted up to one more
    than the window (all `longer_than_window` asks)."""
    window_size: int
    window: list[MessageRow]
    older_unarchived: list[MessageRow]

    @property
    def longer_than_window(self) -> bool:
        """Seed 004's safeguard: a shorter segment needs neither summary nor auto-RAG."""
        return self.history_size > self.window_size


def session_view(
    store: Store,
    user_id: int,
    message_id: int | None,
    window_size: int,
    current_ids: Collection[int] = (),
) -> SessionView:
    """`message_id` and `current_ids` (a grouped turn's earlier messages) are the current
    message: none of them is history."""
    segment = store.sessions.current_segment(user_id)
    current = {message_id, *current_ids} - {None}
    messages = store.messages
    # Only the segment's unarchived part and its size up to the window's are read: a
    # segment can hold a user's whole history (175 ms a call at 20,000 messages, three
    # calls a turn, when the whole segment was read).
    live = live_messages(
        [m for m in messages.live_of_segment(user_id, segment) if m["id"] not in current]
    )
    split = max(0, len(live) - window_size)
    return SessionView(
        segment=segment,
        history_size=messages.newest_in_segment(user_id, segment, current, window_size + 1),
        window_size=window_size,
        window=live[split:],
        older_unarchived=[m for m in live[:split] if m["kind"] == MEMORY_KIND],
    )


def live_messages(history: Sequence[MessageRow]) -> list[MessageRow]:
    """The session's part not yet archived: the unarchived conversation and, among it, the
    messages of other kinds (a memory-only answer), which are never archived themselves;
    those older than the first unarchived conversation went with the conversation around
    them. Only the conversation of it is summarised."""
    first = next(
        (i for i, m in enumerate(history) if m["kind"] == MEMORY_KIND and m["topic_id"] is None),
        None,
    )
    if first is None:
        return []
    return [m for m in history[first:] if m["topic_id"] is None]


def needs_refresh(
    stored: SessionSummaryRow | None, older: Sequence[MessageRow], every: int
) -> bool:
    """Whether the stored summary no longer stands for `older` (oldest first, non-empty)."""
    if stored is None or stored["first_seq"] != older[0]["seq"]:
        return True
    return older[-1]["seq"] - stored["last_seq"] >= every


def latest_within(messages: Sequence[MessageRow], max_chars: int) -> list[MessageRow]:
    """The newest messages whose transcript fits in `max_chars`, oldest first."""
    kept: list[MessageRow] = []
    used = 0
    for message in reversed(messages):
        used += len(transcript([message])) + 1
        if used > max_chars and kept:
            break
        kept.append(message)
    return kept[::-1]


def extractive_summary(older: Sequence[MessageRow], max_chars: int) -> str:
    """The user's messages, one clipped line each; the newest win when space runs out."""
    lines: list[str] = []
    used = 0
    for message in reversed([m for m in older if m["role"] == "user"] or older):
        content = clip(message["content"], EXTRACTIVE_LINE_CHARS)
        line = f"- [{short_time(message['created_at'])}] {content}"
        used += len(line) + 1
        if used > max_chars and lines:
            break
        lines.append(line)
    return "\n".join(reversed(lines))


def summariser_request(
    context: ResponseContext, previous: SessionSummaryRow | None, older: Sequence[MessageRow]
) -> list[BaseMessage]:
    fresh = [m for m in older if previous is None or m["seq"] > previous["last_seq"]]
    return [
        SystemMessage(
            prompt.SYSTEM.format(max_words=int(context.budgets.summary * WORDS_PER_TOKEN))
        ),
        HumanMessage(
            prompt.USER.format(
                previous=neutralize(previous["summary"]) if previous else prompt.NO_PREVIOUS,
                conversation=transcript(latest_within(fresh, SUMMARISER_INPUT_CHARS)),
            )
        ),
    ]


def current_view(deps: Deps, state: ResponseState, context: ResponseContext) -> SessionView:
    return session_view(
        deps.store,
        context.user_id,
        state.get("message_id"),
        context.sliding_window_messages,
        state.get("group_message_ids") or (),
    )


def make_summarise(deps: Deps):
    store = deps.store

    async def summarise(
        state: ResponseState, runtime: Runtime[ResponseContext]
    ) -> Command[Literal["assemble", "extractive_summary"]]:
        """The summary of the unarchived messages before the window, refreshed if due."""
        context = runtime.context
        view = await asyncio.to_thread(current_view, deps, state, context)
        older = view.older_unarchived
        none = {"session_summary": None, "summary_fallback": None}
        if not (view.longer_than_window and older):
            return Command(goto="assemble", update=none)
        stored = await asyncio.to_thread(store.sessions.summary, context.user_id, view.segment)
        if not needs_refresh(stored, older, context.summary_refresh_messages):
            return Command(goto="assemble", update={**none, "session_summary": stored["summary"]})
        still_valid = stored if stored and stored["first_seq"] == older[0]["seq"] else None

        async def request() -> list[BaseMessage]:
            return summariser_request(context, still_valid, older)

        result = await call_agent(deps.models, "summariser", request, user_id=context.user_id)
        if isinstance(result, AgentFallback):
            return Command(goto="extractive_summary", update={"summary_fallback": result.reason})
        saved = await asyncio.to_thread(
            store.sessions.save_summary,
            context.user_id,
            view.segment,
            older[0]["seq"],
            older[-1]["seq"],
            result.value,
            "llm",
        )
        update = {**none, "session_summary": saved["summary"]}
        return Command(goto="assemble", update={**update, **repairs_update("summariser", result)})

    return summarise


def make_extractive_summary(deps: Deps):
    async def extractive(state: ResponseState, runtime: Runtime[ResponseContext]) -> dict:
        """The Summariser's non-LLM path: the user's own messages, clipped, newest first."""
        context = runtime.context
        view = await asyncio.to_thread(current_view, deps, state, context)
        older = view.older_unarchived
        max_chars = context.budgets.summary * CHARS_PER_TOKEN
        saved = await asyncio.to_thread(
            deps.store.sessions.save_summary,
            context.user_id,
            view.segment,
            older[0]["seq"],
            older[-1]["seq"],
            extractive_summary(older, max_chars),
            "extractive",
        )
        return {"session_summary": saved["summary"]}

    return extractive
