"""The background memory worker on a real store: triggers, one run per user, backoff, stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from app.memory import archive_user
from app.worker import MemoryWorker
from core.deps import Deps
from tests.support.messages import BASE_TIME, new_messages

HOUR = 3600.0
STALE = BASE_TIME.timestamp() + 2 * HOUR
"""A clock two hours after the conversation: with chunk_interval 1 h, it is stale."""


class ScriptedArchive:
    """Stands in for archive_user: records calls, fails or blocks as told."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[int] = []
        self.failures = failures
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, deps: Deps, user_id: int, **kwargs: Any) -> list:
        self.calls.append(user_id)
        await self.release.wait()
        if self.failures:
            self.failures -= 1
            raise RuntimeError("provider down")
        return []


async def conversation(deps: Deps, user_id: int, *, start=BASE_TIME) -> None:
    deps.indexer.store_messages(user_id, new_messages(["hi", "hello", "bye"], start=start))


def worker_for(
    deps: Deps,
    archive: ScriptedArchive,
    *,
    interval_s: float = 60,
    max_backoff_s: float = 600,
    clock: Callable[[], float] = lambda: STALE,
) -> MemoryWorker:
    return MemoryWorker(
        deps, interval_s=interval_s, max_backoff_s=max_backoff_s, archive=archive, clock=clock
    )


async def running_blocked_worker(deps: Deps) -> tuple[ScriptedArchive, MemoryWorker]:
    """User 1's stale conversation, and a started worker whose archive run is blocked."""
    await conversation(deps, 1)
    archive = ScriptedArchive()
    archive.release.clear()
    worker = worker_for(deps, archive, interval_s=0.05, max_backoff_s=1)
    worker.start()
    await asyncio.sleep(0.2)
    return archive, worker


async def test_only_users_whose_triggers_fired_are_archived(deps: Deps) -> None:
    await conversation(deps, 1)
    await conversation(deps, 2, start=BASE_TIME + timedelta(hours=1, minutes=50))
    archive = ScriptedArchive()
    worker = worker_for(deps, archive)
    assert await worker.tick() == [1], "user 2 talked 10 minutes ago"
    await asyncio.gather(*worker.runs.values())
    assert archive.calls == [1]
    assert worker.completed_runs == 1


async def test_a_size_trigger_archives_a_fresh_conversation(make_deps) -> None:
    deps = make_deps(max_chunk_size=2)
    await conversation(deps, 1)
    archive = ScriptedArchive()
    worker = worker_for(deps, archive, clock=BASE_TIME.timestamp)
    assert await worker.tick() == [1]


async def test_one_run_per_user_at_a_time(deps: Deps) -> None:
    await conversation(deps, 1)
    archive = ScriptedArchive()
    archive.release.clear()
    worker = worker_for(deps, archive)
    assert await worker.tick() == [1]
    await asyncio.sleep(0.05)
    assert await worker.tick() == [], "the first run is still going"
    archive.release.set()
    await asyncio.gather(*worker.runs.values())
    assert archive.calls == [1]


async def test_a_failed_run_is_retried_after_a_growing_backoff(deps: Deps) -> None:
    await conversation(deps, 1)
    now = [STALE]
    archive = ScriptedArchive(failures=2)
    worker = worker_for(deps, archive, interval_s=10, max_backoff_s=25, clock=lambda: now[0])

    async def tick() -> list[int]:
        started = await worker.tick()
        await asyncio.gather(*worker.runs.values())
        return started

    assert await tick() == [1]
    assert worker.failures == {1: 1}
    now[0] += 19
    assert await tick() == [], "backing off 20 s after the first failure"
    now[0] += 1
    assert await tick() == [1]
    assert worker.failures == {1: 2}
    now[0] += 24
    assert await tick() == [], "40 s capped at 25 s"
    now[0] += 1
    assert await tick() == [1]
    assert worker.failures == {}
    assert worker.completed_runs == 1


async def test_stop_lets_a_running_archive_finish_within_the_bound(deps: Deps) -> None:
    archive, worker = await running_blocked_worker(deps)
    assert archive.calls == [1]
    asyncio.get_running_loop().call_later(0.1, archive.release.set)
    await worker.stop(grace_s=5)
    assert worker.completed_runs == 1
    assert worker.runs == {}


async def test_stop_cancels_a_run_past_the_bound(deps: Deps) -> None:
    _, worker = await running_blocked_worker(deps)
    await asyncio.wait_for(worker.stop(grace_s=0.1), 2)
    assert worker.completed_runs == 0
    assert worker.runs == {}


async def test_a_topic_whose_message_was_edited_is_picked_up_and_summarised_again(
    deps: Deps,
) -> None:
    from app.memory import archive_user

    await conversation(deps, 1)
    await archive_user(deps, 1, archive_all=True)
    archive = ScriptedArchive()
    worker = worker_for(deps, archive)
    assert await worker.tick() == [], "everything is archived"

    [first, *_] = deps.store.messages.all_of(1)
    deps.store.messages.rewrite(1, first["id"], "hi, I moved to Lisbon", edit=True)
    assert await worker.tick() == [1]
    await asyncio.gather(*worker.runs.values())

    [state] = [await archive_user(deps, 1)]
    assert state == [], "no chunk: the run only summarised the topic again"
    assert deps.store.topics.stale(1) == []
    [topic] = deps.store.topics.by_ids(1, [first["topic_id"]])
    assert "Lisbon" in topic["summary"]


async def test_finished_sittings_wait_for_a_batch_of_messages(make_deps) -> None:
    """`TOPICA_ARCHIVE_BATCH_MESSAGES`: a finished sitting of three messages waits for a
    batch of five, in the worker's triggers and in the memory graph alike, until a second
    sitting is over or the first has waited `TOPICA_ARCHIVE_MAX_WAIT`."""
    deps = make_deps(archive_batch_messages=5, archive_max_wait=timedelta(days=1))
    await conversation(deps, 1)
    archive = ScriptedArchive()
    assert await worker_for(deps, archive).tick() == []
    assert await archive_user(deps, 1, now_ts=STALE) == []
    assert len(deps.store.messages.unarchived(1)) == 3

    later = BASE_TIME + timedelta(hours=3)
    deps.indexer.store_messages(1, new_messages(["again", "yes", "ok"], start=later, prefix="n"))
    assert await worker_for(deps, archive, clock=lambda: later.timestamp() + 600).tick() == []
    quiet = later.timestamp() + 2 * HOUR
    assert await worker_for(deps, archive, clock=lambda: quiet).tick() == [1]
    archived = await archive_user(deps, 1, now_ts=quiet)
    assert [len(state["chunk"]) for state in archived] == [6]
    assert deps.store.messages.unarchived(1) == []


async def test_the_longest_wait_archives_a_sitting_alone(make_deps) -> None:
    deps = make_deps(archive_batch_messages=5, archive_max_wait=timedelta(days=1))
    await conversation(deps, 1)
    a_day_on = BASE_TIME.timestamp() + 24 * HOUR
    assert await archive_user(deps, 1, now_ts=a_day_on - 60) == []
    archived = await archive_user(deps, 1, now_ts=a_day_on)
    assert [len(state["chunk"]) for state in archived] == [3]


async def test_a_new_conversation_ends_the_wait(make_deps) -> None:
    """`/new`: the finished sitting of the conversation left is archived without waiting."""
    deps = make_deps(archive_batch_messages=5, archive_max_wait=timedelta(days=1))
    await conversation(deps, 1)
    archive = ScriptedArchive()
    assert await worker_for(deps, archive).tick() == []
    deps.store.sessions.start_new_segment(1)
    assert await worker_for(deps, archive).tick() == [1]
    archived = await archive_user(deps, 1, now_ts=STALE)
    assert [len(state["chunk"]) for state in archived] == [3]
