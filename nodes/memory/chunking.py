"""Load chunk: the next run of a user's unarchived messages that is ready to archive.

Seed 000's triggers: archiving starts when the conversation has been quiet for
`chunk_interval`, or when `max_chunk_size` messages have piled up; a chunk is cut by size
(`max_chunk_size` messages, `split_threshold_chars` characters), never by a pause, so one
splitter call reads as many finished sittings as fit (issue 15: LLM calls per archived
message). A *sitting* ends at a pause of `chunk_interval` or more, or over `topic_max_gap`
(`nodes.shared.clock.ends_sitting`):
what lies before it is finished and ready even while the conversation goes on, and a chunk
that must be cut for size is cut at the last sitting's end inside it when there is one, so
no sitting is read in two halves. Messages come in time order (`created_at`), not in the
order they were stored, so an older session ingested after live chat is archived in its
own time. The trailing sitting (the conversation still going on) is only ready once it has
been quiet for `chunk_interval`, unless the run archives everything (a saved session).
With `archive_batch_messages` set, finished sittings wait for one another so that one
splitter call and one Archivist call read several (`archive_batch`).

Why 6 hours for `topic_max_gap`: it is the length of a separate sitting. Pauses inside one
sitting (a meal, a meeting, an errand) stay under it, so a subject picked up after lunch
stays one topic; a night's sleep is longer, so yesterday's conversation and today's never
share one (validation cuts any topic there, whatever the splitter said). It bounds topics
independently of `chunk_interval`, which only decides when archiving runs and where the
non-LLM splitter's sittings end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from langgraph.runtime import Runtime

from core.context import MemoryContext
from core.deps import Deps
from core.records import MessageRow
from core.state import MemoryState
from nodes.shared.clock import ends_sitting

T = TypeVar("T", bound=Any)


def sittings(
    items: Sequence[T],
    *,
    interval_s: float,
    max_gap_s: float = float("inf"),
    time_of: Callable[[T], float] = lambda message: message["ts"],
) -> list[list[T]]:
    """`items` (messages in time order; `time_of` gives each one's timestamp) cut where a
    pause ends a sitting."""
    pieces: list[list[T]] = []
    last = 0.0
    for item in items:
        now = time_of(item)
        if not pieces or ends_sitting(now - last, interval_s=interval_s, max_gap_s=max_gap_s):
            pieces.append([])
        pieces[-1].append(item)
        last = now
    return pieces


def chunk_sittings(chunk: Sequence[MessageRow], context: MemoryContext) -> list[list[MessageRow]]:
    """A chunk's sittings under the run's thresholds."""
    return sittings(chunk, interval_s=context.chunk_interval_s, max_gap_s=context.topic_max_gap_s)


def next_chunk(
    messages: Sequence[MessageRow],
    *,
    interval_s: float,
    max_gap_s: float = float("inf"),
    max_messages: int,
    max_chars: int,
    now_ts: float,
    archive_all: bool,
    batch_messages: int = 0,
    max_wait_s: float = float("inf"),
    segment: int = 0,
) -> list[MessageRow]:
    """The first ready chunk of `messages` (in time order), or [] when none is ready.

    With `batch_messages`, finished sittings wait for one another (`archive_batch`) until
    that many messages are ready, the chunk is full, the oldest has waited `max_wait_s`,
    or the user has started a conversation after theirs (`segment`, the current one).
    """
    chunk: list[MessageRow] = []
    chars = 0
    finished = 0  # how many of the chunk's messages lie before the last sitting's end
    for message in messages:
        if chunk:
            gap = message["ts"] - chunk[-1]["ts"]
            if ends_sitting(gap, interval_s=interval_s, max_gap_s=max_gap_s):
                finished = len(chunk)
            if len(chunk) >= max_messages or chars + len(message["content"]) > max_chars:
                return chunk[:finished] if finished else chunk
        chunk.append(message)
        chars += len(message["content"])
    if archive_all:
        return chunk
    ready = chunk if chunk and now_ts - chunk[-1]["ts"] >= interval_s else chunk[:finished]
    return ready if archive_batch(ready, batch_messages, max_wait_s, now_ts, segment) else []


def archive_batch(
    ready: Sequence[MessageRow], batch: int, max_wait_s: float, now_ts: float, segment: int
) -> bool:
    """Whether finished sittings that fit in one chunk are archived now (`archive_batch_messages`).

    Each archiving costs a splitter call and an Archivist call whatever it reads, so in
    live chat, where every sitting is over long before the next begins, archiving sitting
    by sitting costs about 9 calls per 100 messages (docs/performance.md, "LLM cost"). Waiting until
    `batch` messages are ready lets one pair of calls read several sittings. Meanwhile the
    waiting messages are stored and indexed, and a turn finds them as messages from earlier
    in the conversation (auto-RAG); their topics and facts come at most `max_wait_s` after
    the oldest of them was written. Auto-RAG searches the current conversation only, so
    messages of one the user has left (`/new`) wait no longer: only topics find them.
    """
    if not ready:
        return False
    return (
        len(ready) >= batch
        or now_ts - ready[0]["ts"] >= max_wait_s
        or any(message["segment"] < segment for message in ready)
    )


def ready_chunk(deps: Deps, context: MemoryContext) -> list[MessageRow]:
    """The chunk a memory run for `context.user_id` archives now, empty when none is
    ready: the one readiness rule of `load_chunk` and of the memory worker."""
    # A chunk never holds more than max_chunk_size messages, so reading one
    # more than that is enough to find where it ends.
    pending = deps.store.messages.unarchived(context.user_id, context.max_chunk_size + 1)
    batching = context.archive_batch_messages > 0 and not context.archive_all
    segment = deps.store.sessions.current_segment(context.user_id) if batching else 0
    return next_chunk(
        pending,
        interval_s=context.chunk_interval_s,
        max_gap_s=context.topic_max_gap_s,
        max_messages=context.max_chunk_size,
        max_chars=context.split_threshold_chars,
        now_ts=context.now_ts if context.now_ts is not None else time.time(),
        archive_all=context.archive_all,
        batch_messages=context.archive_batch_messages,
        max_wait_s=context.archive_max_wait_s,
        segment=segment,
    )


def make_load_chunk(deps: Deps):
    async def load_chunk(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        context = runtime.context
        chunk = await asyncio.to_thread(ready_chunk, deps, context)
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
