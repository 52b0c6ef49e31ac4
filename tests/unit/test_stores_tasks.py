"""Scheduled tasks in the store, on each engine: created, listed and changed only by
their user; each due run claimed by exactly one owner; runs recorded and read back."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from core.errors import StoreError
from stores.relational import RelationalStore

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
DAILY = "FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0"


def test_a_task_is_its_users_alone(store: RelationalStore):
    task = store.tasks.add(1, " call mom ", NOW, "Europe/Moscow", None)

    assert (task["request"], task["state"], task["rule"]) == ("call mom", "active", None)
    assert task["next_run_at"] == "2026-03-02T09:00:00+00:00"
    assert store.tasks.of_user(1) == [task]
    assert store.tasks.of_user(2) == []
    assert store.tasks.get(2, task["id"]) is None
    assert store.tasks.set_state(2, task["id"], "cancelled") is None
    assert store.tasks.get(1, task["id"])["state"] == "active"
    assert store.tasks.runs(2, task["id"], 5) == []


def test_bad_tasks_are_refused(store: RelationalStore):
    with pytest.raises(StoreError):
        store.tasks.add(1, "  ", NOW, "UTC", None)
    with pytest.raises(StoreError):
        store.tasks.add(1, "x", NOW.replace(tzinfo=None), "UTC", None)
    task = store.tasks.add(1, "x", NOW, "UTC", None)
    with pytest.raises(StoreError):
        store.tasks.set_state(1, task["id"], "sleeping")  # type: ignore[arg-type]


def test_pause_resume_cancel(store: RelationalStore):
    task = store.tasks.add(1, "report", NOW, "UTC", DAILY)

    assert store.tasks.set_state(1, task["id"], "paused")["state"] == "paused"
    assert store.tasks.claim_due(NOW + timedelta(hours=1), "a", 60, 10) == []
    later = NOW + timedelta(days=1)
    resumed = store.tasks.set_state(1, task["id"], "active", later)
    assert (resumed["state"], resumed["next_run_at"]) == ("active", "2026-03-03T09:00:00+00:00")
    assert store.tasks.set_state(1, task["id"], "cancelled")["state"] == "cancelled"
    # a cancelled task stays cancelled
    assert store.tasks.set_state(1, task["id"], "active", later)["state"] == "cancelled"
    assert store.tasks.of_user(1, ["active", "paused"]) == []


def test_a_due_run_is_claimed_once_then_recorded(store: RelationalStore):
    once = store.tasks.add(1, "water", NOW, "UTC", None)
    daily = store.tasks.add(2, "plan", NOW, "UTC", DAILY)
    store.tasks.add(3, "not yet", NOW + timedelta(minutes=5), "UTC", None)

    claimed = store.tasks.claim_due(NOW, "a", 60, 10)
    assert {(due["user_id"], due["task"]["id"]) for due in claimed} == {
        (1, once["id"]),
        (2, daily["id"]),
    }
    assert store.tasks.claim_due(NOW + timedelta(seconds=30), "b", 60, 10) == []

    run = {"due_at": once["next_run_at"], "started_at": NOW.isoformat(), "output": "water"}
    assert store.tasks.finish_run(1, once["id"], "b", run, None) is None  # not b's claim
    recorded = store.tasks.finish_run(1, once["id"], "a", run, None)
    assert (recorded["output"], recorded["late"], recorded["tools_called"]) == ("water", False, [])
    assert store.tasks.get(1, once["id"])["state"] == "done"
    assert store.tasks.get(1, once["id"])["next_run_at"] is None

    tomorrow = NOW + timedelta(days=1)
    late_run = {**run, "output": "plan", "late": True, "tools_called": ["search_history"]}
    store.tasks.finish_run(2, daily["id"], "a", late_run, tomorrow)
    assert store.tasks.get(2, daily["id"])["state"] == "active"
    assert store.tasks.get(2, daily["id"])["next_run_at"] == "2026-03-03T09:00:00+00:00"
    assert [r["late"] for r in store.tasks.runs(2, daily["id"], 5)] == [True]
    assert store.tasks.runs(1, daily["id"], 5) == []


def test_an_expired_claim_is_taken_again(store: RelationalStore):
    task = store.tasks.add(1, "water", NOW, "UTC", None)
    assert len(store.tasks.claim_due(NOW, "dead", 60, 10)) == 1

    retaken = store.tasks.claim_due(NOW + timedelta(seconds=61), "alive", 60, 10)

    assert [due["task"]["id"] for due in retaken] == [task["id"]]
    run = {"due_at": task["next_run_at"], "started_at": NOW.isoformat(), "output": "water"}
    assert store.tasks.finish_run(1, task["id"], "dead", run, None) is None
    assert store.tasks.finish_run(1, task["id"], "alive", run, None) is not None


def test_concurrent_claimers_take_each_run_once(store: RelationalStore):
    ids = {store.tasks.add(user, f"task {user}", NOW, "UTC", None)["id"] for user in range(30)}

    def claim(owner: str) -> list[int]:
        return [due["task"]["id"] for due in store.tasks.claim_due(NOW, owner, 60, 100)]

    with ThreadPoolExecutor(4) as pool:
        taken = [task_id for found in pool.map(claim, "abcd") for task_id in found]

    assert sorted(taken) == sorted(ids)


def test_runs_keep_the_last_ones_and_forgetting_removes_everything(store: RelationalStore):
    task = store.tasks.add(1, "plan", NOW, "UTC", DAILY)
    for day in range(7):
        at = NOW + timedelta(days=day)
        store.tasks.claim_due(at, "a", 60, 10)
        run = {"due_at": at.isoformat(), "started_at": at.isoformat(), "output": f"day {day}"}
        store.tasks.finish_run(1, task["id"], "a", run, at + timedelta(days=1))
    other = store.tasks.add(2, "keep", NOW, "UTC", None)

    assert [r["output"] for r in store.tasks.runs(1, task["id"], 5)] == [
        f"day {day}" for day in range(2, 7)
    ]
    assert store.tasks.runs(1, task["id"], 0) == []
    assert store.tasks.forget(1) == 1
    assert store.tasks.of_user(1) == [] and store.tasks.runs(1, task["id"], 5) == []
    assert store.tasks.of_user(2) == [other]


def test_each_user_has_a_time_zone(store: RelationalStore):
    assert store.tasks.timezone(1) is None
    store.tasks.set_timezone(1, "Europe/Moscow")
    assert (store.tasks.timezone(1), store.tasks.timezone(2)) == ("Europe/Moscow", None)
