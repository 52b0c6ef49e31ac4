"""The background memory worker: archives users' conversations while the bot answers.

Every `interval_s` it looks for users whose unarchived messages meet seed 000's
triggers (a chunk closed by an inactivity gap of `chunk_interval`, or by
`max_chunk_size` messages or `split_threshold_chars`, or a tail quiet for
`chunk_interval`; with `archive_batch_messages`, enough of them or the longest wait:
`nodes.memory.chunking.archive_batch`) and runs the memory graph for them
(`archive_user`). One run per user at a time, one user at a time (the local embedder
is CPU-bound), each in its own task, so replies never wait for memory. A failed run is
logged and the user is retried after a backoff that doubles up to `max_backoff_s`.
`stop()` lets running archive runs finish within a bound; an interrupted run
resumes from its checkpoint next time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from app.memory import archive_user
from core.context import MemoryContext
from core.deps import Deps
from core.tracing import user_key
from nodes.memory.chunking import ready_chunk

log = logging.getLogger(__name__)

Archive = Callable[..., Awaitable[Any]]


class MemoryWorker:
    def __init__(
        self,
        deps: Deps,
        *,
        interval_s: float,
        max_backoff_s: float,
        checkpointer: BaseCheckpointSaver | None = None,
        archive: Archive = archive_user,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.deps = deps
        self.interval_s = interval_s
        self.max_backoff_s = max_backoff_s
        self.checkpointer = checkpointer
        self.archive = archive
        self.clock = clock
        self.runs: dict[int, asyncio.Task[None]] = {}
        self.completed_runs = 0
        self.failures: dict[int, int] = {}
        self._retry_at: dict[int, float] = {}
        self._one_at_a_time = asyncio.Semaphore(1)
        self._stopping = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._loop = asyncio.create_task(self._run_forever(), name="memory-worker")

    async def _run_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.tick()
            except Exception:
                log.exception("memory worker: looking for work failed")
            with suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval_s)

    def _candidates(self) -> list[int]:
        """Users with unarchived messages or topics to summarise again (their messages
        changed), and, with an archivist, users whose facts wait."""
        store = self.deps.store
        users = {user_id for user_id, _count, _newest in store.messages.users_with_unarchived()}
        users |= set(store.topics.users_with_stale())
        if self.deps.models.get("archivist") is not None:
            users |= set(store.topics.users_without_facts())
        return sorted(users)

    def _ready(self, user_id: int, now_ts: float) -> bool:
        settings = self.deps.settings
        if self.deps.store.topics.stale(user_id):
            return True
        if self.deps.models.get("archivist") is not None and self.deps.store.topics.without_facts(
            user_id, 1
        ):
            return True
        context = MemoryContext.from_settings(settings, user_id=user_id, now_ts=now_ts)
        chunk = ready_chunk(self.deps, context)
        return bool(chunk)

    async def tick(self) -> list[int]:
        """Start a run for every user who is ready, not running and not backing off."""
        now_ts = self.clock()
        users = await asyncio.to_thread(self._candidates)
        started = []
        for user_id in users:
            if self._stopping.is_set():
                break
            if user_id in self.runs or self._retry_at.get(user_id, 0.0) > now_ts:
                continue
            if not await asyncio.to_thread(self._ready, user_id, now_ts):
                continue
            task = asyncio.create_task(self._archive(user_id), name=f"memory-{user_id}")
            self.runs[user_id] = task
            task.add_done_callback(lambda _, user_id=user_id: self.runs.pop(user_id, None))
            started.append(user_id)
        return started

    async def _archive(self, user_id: int) -> None:
        async with self._one_at_a_time:
            if self._stopping.is_set():
                return
            try:
                states = await self.archive(
                    self.deps, user_id, checkpointer=self.checkpointer, now_ts=self.clock()
                )
            except Exception:
                failures = self.failures.get(user_id, 0) + 1
                self.failures[user_id] = failures
                delay = min(self.interval_s * 2**failures, self.max_backoff_s)
                self._retry_at[user_id] = self.clock() + delay
                log.exception(
                    "memory run for user %s failed (%d in a row); retrying in %.0f s",
                    user_key(user_id),
                    failures,
                    delay,
                )
                return
            self.failures.pop(user_id, None)
            self._retry_at.pop(user_id, None)
            self.completed_runs += 1
            log.info("memory run for user %s archived %d chunk(s)", user_key(user_id), len(states))

    async def stop(self, grace_s: float) -> None:
        """No new runs; running ones get `grace_s` to finish, then are cancelled."""
        self._stopping.set()
        if self._loop is not None:
            await self._loop
            self._loop = None
        running = list(self.runs.values())
        if not running:
            return
        _, late = await asyncio.wait(running, timeout=grace_s)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
            log.warning("memory worker: %d run(s) cancelled at shutdown", len(late))
