"""The rolling summary of a long session (seed 003): what has left the sliding window.

The summary covers the current segment's unarchived messages older than the window and
is stored per segment with the range of messages it covers. It is rewritten when
`summary_refresh_messages` more messages have left the window since it was written, or
when archiving took messages from its start. The Summariser agent folds the new messages
into the previous summary; without a model (or when it fails) the summary is extractive:
the user's own messages, newest kept first when they do not all fit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from langchain_core.messages import HumanMessage, SystemMessage

from graphs.context import ResponseContext
from graphs.deps import Deps
from nodes.budget import CHARS_PER_TOKEN
from nodes.formatting import clip, short_time, transcript
from nodes.structured import message_text
from prompts import summariser as prompt
from stores.records import MessageRow, SessionSummaryRow

log = logging.getLogger(__name__)

SUMMARISER_INPUT_CHARS = 24_000
EXTRACTIVE_LINE_CHARS = 200
WORDS_PER_TOKEN = 0.6


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


async def llm_summary(
    deps: Deps,
    context: ResponseContext,
    previous: SessionSummaryRow | None,
    older: Sequence[MessageRow],
) -> str | None:
    """The Summariser's updated summary, or None without a model or when it fails."""
    model = deps.models.get("summariser")
    if model is None:
        return None
    fresh = [m for m in older if previous is None or m["seq"] > previous["last_seq"]]
    request = [
        SystemMessage(
            prompt.SYSTEM.format(max_words=int(context.summary_budget_tokens * WORDS_PER_TOKEN))
        ),
        HumanMessage(
            prompt.USER.format(
                previous=previous["summary"] if previous else prompt.NO_PREVIOUS,
                conversation=transcript(latest_within(fresh, SUMMARISER_INPUT_CHARS)),
            )
        ),
    ]
    try:
        reply = await model.ainvoke(request)
    except Exception as error:  # any provider failure: the extractive summary stands in
        log.warning(
            "user %s: summariser failed: %s: %s",
            context.user_id,
            type(error).__name__,
            clip(str(error), 200),
        )
        return None
    return message_text(reply).strip() or None


async def session_summary(
    deps: Deps, context: ResponseContext, segment: int, older: Sequence[MessageRow]
) -> str | None:
    """The summary of `older` (the unarchived messages before the window), refreshed if due."""
    if not older:
        return None
    store = deps.store
    stored = await asyncio.to_thread(store.session_summary, context.user_id, segment)
    if not needs_refresh(stored, older, context.summary_refresh_messages):
        return stored["summary"]
    still_valid = stored if stored and stored["first_seq"] == older[0]["seq"] else None
    summary = await llm_summary(deps, context, still_valid, older)
    written_by = "llm"
    if summary is None:
        max_chars = context.summary_budget_tokens * CHARS_PER_TOKEN
        summary, written_by = extractive_summary(older, max_chars), "extractive"
    saved = await asyncio.to_thread(
        store.save_session_summary,
        context.user_id,
        segment,
        older[0]["seq"],
        older[-1]["seq"],
        summary,
        written_by,
    )
    return saved["summary"]
