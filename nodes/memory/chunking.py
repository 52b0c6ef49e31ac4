"""Load chunk: the next run of a user's unarchived messages that is ready to archive.

Seed 000's triggers: a chunk ends at an inactivity gap of at least
`chunk_interval`, at `max_chunk_size` messages, or when it would pass
`split_threshold_chars`; and, whatever `chunk_interval` is set to, at a gap over
`topic_max_gap`. Messages come in time order (`created_at`), not in the order they were
stored, so an older session ingested after live chat is archived in its own time. The
trailing chunk (the conversation still going on) is only ready once it has been quiet for
`chunk_interval`, unless the run archives everything (a saved session).

Why 6 hours for `topic_max_gap`: it is the length of a separate sitting. Pauses inside one
sitting (a meal, a meeting, an errand) stay under it, so a subject picked up after lunch
stays one topic; a night's sleep is longer, so yesterday's conversation and today's never
share one. It bounds topics independently of `chunk_interval`, which only decides when
archiving runs (raised, it batches work) and says nothing about what belongs together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Literal

from langgraph.runtime import Runtime

from core.context import MemoryContext
from core.deps import Deps
from core.records import MessageRow
from core.state import MemoryState


def next_chunk(
    messages: Sequence[MessageRow],
    *,
    interval_s: float,
    max_gap_s: float = float("inf"),
    max_messages: int,
    max_chars: int,
    now_ts: float,
    archive_all: bool,
) -> list[MessageRow]:
    """The first ready chunk of `messages` (in time order), or [] when none is ready."""
    chunk: list[MessageRow] = []
    chars = 0
    for message in messages:
        if chunk:
            gap = message["ts"] - chunk[-1]["ts"]
            too_big = len(chunk) >= max_messages or chars + len(message["content"]) > max_chars
            if gap >= interval_s or gap > max_gap_s or too_big:
                return chunk
        chunk.append(message)
        chars += len(message["content"])
    if chunk and (archive_all or now_ts - chunk[-1]["ts"] >= interval_s):
        return chunk
    return []


def make_load_chunk(deps: Deps):
    async def load_chunk(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        context = runtime.context
        # A chunk never holds more than max_chunk_size messages, so reading one
        # more than that is enough to find where it ends.
        pending = await asyncio.to_thread(
            deps.store.messages.unarchived, context.user_id, context.max_chunk_size + 1
        )
        chunk = next_chunk(
            pending,
            interval_s=context.chunk_interval_s,
            max_gap_s=context.topic_max_gap_s,
            max_messages=context.max_chunk_size,
            max_chars=context.split_threshold_chars,
            now_ts=context.now_ts if context.now_ts is not None else time.time(),
            archive_all=context.archive_all,
        )
        # With nothing to archive, topics whose facts are still missing (the archivist
        # failed, or was not configured then) get their turn, so they are not stuck until
        # the user writes again.
        facts_pending = (
            not chunk
            and deps.models.get("archivist") is not None
            and bool(await asyncio.to_thread(deps.store.topics.without_facts, context.user_id, 1))
        )
        # Start every run from a clean slate: this thread may have archived a chunk before.
        return {
            "chunk": chunk,
            "facts_pending": facts_pending,
            "proposals": [],
            "split_by": "embeddings",
            "split_fallback": None,
            "drafts": [],
            "topic_vectors": [],
            "saved_topic_ids": [],
            "merges": [],
            "merge_fallback": None,
        }

    return load_chunk


def route_after_load(state: MemoryState) -> Literal["split", "extract_facts", "__end__"]:
    if state.get("chunk"):
        return "split"
    return "extract_facts" if state.get("facts_pending") else "__end__"
