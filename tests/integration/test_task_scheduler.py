"""The scheduler's pass over due tasks, on each engine: each due run delivered once and
recorded; a run missed while down delivered once, marked late, without catching up every
missed period; a failed delivery retried after its claim expires; two schedulers sharing
one database deliver each of 50 runs exactly once."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta

from app.scheduling import UNDELIVERABLE, Undeliverable, run_due, task_message_id
from app.tasks import add_task, change_task
from core.deps import Deps

NOW = datetime(2026, 11, 26, 19, 0, tzinfo=UTC)


class Outbox:
    def __init__(self, failing: bool = False, refusing: bool = False) -> None:
        self.sent: list[tuple[int, int, str, bool]] = []
        self.failing = failing
        self.refusing = refusing

    async def __call__(
        self, user_id: int, task, text: str, late: bool, answer_id: int | None
    ) -> None:
        if self.refusing:
            raise Undeliverable("Forbidden: bot was blocked by the user")
        if self.failing:
            raise ConnectionError("telegram is down")
        self.sent.append((user_id, task["id"], text, late))


async def test_a_due_run_is_delivered_once_and_recorded(deps: Deps):
    once = add_task(deps, 1, "через 5 секунд", "выпить воды", now=NOW)
    paused = add_task(deps, 2, "через 5 секунд", "paused", now=NOW)
    change_task(deps, 2, paused["id"], "pause")
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=NOW) == 0
    due = NOW + timedelta(seconds=6)
    assert await run_due(deps, "a", outbox, now=due) == 1
    assert await run_due(deps, "b", outbox, now=due + timedelta(seconds=1)) == 0

    assert outbox.sent == [(1, once["id"], "выпить воды", False)]
    runs = deps.store.tasks.runs(1, once["id"], 5)
    assert [(r["output"], r["fallback_reason"], r["late"]) for r in runs] == [
        ("выпить воды", None, False)
    ]
    assert deps.store.tasks.get(1, once["id"])["state"] == "done"


async def test_missed_runs_are_sent_once_marked_late(deps: Deps):
    daily = add_task(deps, 1, "каждый день в 9:00", "план дня", now=NOW)  # UTC
    back_after_three_days = NOW + timedelta(days=3)
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=back_after_three_days) == 1
    assert await run_due(deps, "a", outbox, now=back_after_three_days) == 0

    assert outbox.sent == [(1, daily["id"], "план дня", True)]
    task = deps.store.tasks.get(1, daily["id"])
    assert task["next_run_at"] == "2026-11-30T09:00:00+00:00"
    # the next three times, each once, on time
    for day in range(3):
        at = datetime(2026, 11, 30, 9, 0, 1, tzinfo=UTC) + timedelta(days=day)
        assert await run_due(deps, "a", outbox, now=at) == 1
    assert [late for *_, late in outbox.sent] == [True, False, False, False]
    assert len(deps.store.tasks.runs(1, daily["id"], 10)) == 4


async def test_a_failed_delivery_is_tried_again_after_the_lease(deps: Deps):
    task = add_task(deps, 1, "через 5 секунд", "позвонить", now=NOW)
    due = NOW + timedelta(seconds=5)

    assert await run_due(deps, "a", Outbox(failing=True), now=due) == 0
    outbox = Outbox()
    assert await run_due(deps, "b", outbox, now=due + timedelta(seconds=30)) == 0
    lease = deps.settings.task_claim_lease_s
    assert await run_due(deps, "b", outbox, now=due + timedelta(seconds=lease + 1)) == 1
    assert outbox.sent == [(1, task["id"], "позвонить", True)]


async def test_an_undeliverable_run_leaves_no_message_in_the_history(deps: Deps):
    """A run refused for good is recorded undelivered and its message, never received,
    is not kept; a run that failed for a passing reason keeps its message (stored once)
    for the delivery after its lease."""
    blocked = add_task(deps, 1, "через 5 секунд", "позвонить", now=NOW)
    other = add_task(deps, 2, "через 5 секунд", "написать", now=NOW)
    due = NOW + timedelta(seconds=5)
    blocked_id = task_message_id(blocked["id"], blocked["next_run_at"])
    other_id = task_message_id(other["id"], other["next_run_at"])

    assert await run_due(deps, "a", Outbox(refusing=True), now=due) == 0

    [run] = deps.store.tasks.runs(1, blocked["id"], 5)
    assert run["fallback_reason"] == UNDELIVERABLE
    assert deps.store.messages.by_external_id(1, blocked_id) is None
    assert deps.store.messages.all_of(1) == []
    assert deps.store.messages.by_external_id(2, other_id) is None, "each user's own"
    assert deps.store.tasks.get(1, blocked["id"])["state"] == "done"

    again = add_task(deps, 1, "через 5 секунд", "позвонить ещё", now=NOW)
    assert await run_due(deps, "a", Outbox(failing=True), now=due) == 0
    kept = deps.store.messages.by_external_id(1, task_message_id(again["id"], again["next_run_at"]))
    assert kept is not None and kept["content"] == "позвонить ещё"
    lease = deps.settings.task_claim_lease_s
    outbox = Outbox()
    assert await run_due(deps, "b", outbox, now=due + timedelta(seconds=lease + 1)) == 1
    assert outbox.sent == [(1, again["id"], "позвонить ещё", True)]
    assert [row["content"] for row in deps.store.messages.all_of(1)] == ["позвонить ещё"]


async def test_two_schedulers_deliver_each_of_fifty_runs_once(deps: Deps):
    ids = {
        add_task(deps, user, f"через {5 + user % 10} секунд", f"task {user}", now=NOW)["id"]
        for user in range(50)
    }
    outbox = Outbox()
    moments = [NOW + timedelta(seconds=second) for second in range(4, 16, 2)]

    for at in moments:
        await asyncio.gather(*(run_due(deps, owner, outbox, now=at) for owner in "ab"))

    assert Counter(task_id for _, task_id, _, _ in outbox.sent) == Counter(ids)
