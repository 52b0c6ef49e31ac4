"""Scheduled tasks and reminders, their runs, and each user's time zone.

A task belongs to one user: a request, a schedule (`rule`: an RFC 5545 recurrence rule,
or none for a task that runs once), the time zone its times are read in, a state
(active, paused, done, cancelled) and the next time it is due (`next_run_at`, UTC ISO
8601; none once it is done or cancelled). Every method that reads or changes a task
takes the user id and filters on it.

Due runs are claimed, so that with several processes on one database each run is taken
by exactly one: `claim_due` sets a task's claim (owner, until when) with one
compare-and-set `UPDATE` that succeeds only while no live claim holds and the task is
still due; `finish_run` records the run, moves the task to its next time (or ends it)
and drops the claim, only for the claim's owner. A claim whose owner died expires after
its lease, and another process takes the run again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from typing_extensions import TypedDict

from core.errors import StoreError
from core.records import now_iso
from stores.relational.database import Repository
from stores.relational.rows import ensure_user

TaskState = Literal["active", "paused", "done", "cancelled"]
TASK_STATES: tuple[TaskState, ...] = ("active", "paused", "done", "cancelled")


class TaskRow(TypedDict):
    id: int
    request: str
    rule: str | None
    timezone: str
    state: TaskState
    next_run_at: str | None
    created_at: str


class TaskRunRow(TypedDict):
    id: int
    task_id: int
    due_at: str
    started_at: str
    finished_at: str
    output: str
    tools_called: list[str]
    fallback_reason: str | None
    late: bool


class DueTask(TypedDict):
    """A run `claim_due` took: the task, and the owner's user id to deliver it to."""

    user_id: int
    task: TaskRow


def utc_iso(moment: datetime) -> str:
    """The stored form of a time: UTC, to the second (so text order is time order)."""
    if moment.tzinfo is None:
        raise StoreError("a task time needs a time zone")
    return moment.astimezone(UTC).isoformat(timespec="seconds")


_TASK_COLUMNS = "id, request, rule, timezone, state, next_run_at, created_at"


def _task(row: Any) -> TaskRow:
    return TaskRow(**{key: row[key] for key in TaskRow.__annotations__})  # type: ignore[typeddict-item]


def _run(row: Any) -> TaskRunRow:
    data = {key: row[key] for key in TaskRunRow.__annotations__}
    data["tools_called"] = json.loads(data["tools_called"])
    data["late"] = bool(data["late"])
    return TaskRunRow(**data)  # type: ignore[typeddict-item]


class TaskRepository(Repository):
    def add(
        self, user_id: int, request: str, first_run: datetime, timezone: str, rule: str | None
    ) -> TaskRow:
        """A new active task, first due at `first_run` (recurring when `rule` is given)."""
        if not request.strip():
            raise StoreError("a task needs a request")
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            row = db.execute(
                "INSERT INTO tasks (user_id, request, rule, timezone, state, next_run_at, "
                f"created_at) VALUES (?, ?, ?, ?, 'active', ?, ?) RETURNING {_TASK_COLUMNS}",
                (user_id, request.strip(), rule, timezone, utc_iso(first_run), now_iso()),
            ).fetchone()
        return _task(row)

    def get(self, user_id: int, task_id: int) -> TaskRow | None:
        rows = self._db.rows(
            f"SELECT {_TASK_COLUMNS} FROM tasks WHERE user_id = ? AND id = ?", (user_id, task_id)
        )
        return _task(rows[0]) if rows else None

    def of_user(self, user_id: int, states: Sequence[TaskState] = TASK_STATES) -> list[TaskRow]:
        """The user's tasks in the given states, oldest first."""
        marks = ",".join("?" * len(states))
        rows = self._db.rows(
            f"SELECT {_TASK_COLUMNS} FROM tasks WHERE user_id = ? AND state IN ({marks}) "
            "ORDER BY id",
            (user_id, *states),
        )
        return [_task(row) for row in rows]

    def set_state(
        self, user_id: int, task_id: int, state: TaskState, next_run_at: datetime | None = None
    ) -> TaskRow | None:
        """Pause, resume (with its next time), cancel or end one of the user's tasks; None
        when the user has no such task. A cancelled or done task stays so."""
        if state not in TASK_STATES:
            raise StoreError(f"unknown task state {state!r}")
        due = utc_iso(next_run_at) if next_run_at else None
        with self._db.transaction() as db:
            row = db.execute(
                "UPDATE tasks SET state = ?, next_run_at = COALESCE(?, next_run_at) "
                "WHERE user_id = ? AND id = ? AND state NOT IN ('done', 'cancelled') "
                f"RETURNING {_TASK_COLUMNS}",
                (state, due, user_id, task_id),
            ).fetchone()
        return _task(row) if row else self.get(user_id, task_id)

    def claim_due(self, now: datetime, owner: str, lease_s: float, limit: int) -> list[DueTask]:
        """Claim up to `limit` active tasks due by `now` that no live claim holds, for
        `owner` until `now + lease_s`. Across all users: the scheduler's one read; each
        row names its user, and every later call on it passes that user's id."""
        at = utc_iso(now)
        until = utc_iso(now + timedelta(seconds=lease_s))
        candidates = self._db.rows(
            "SELECT id, user_id FROM tasks WHERE state = 'active' AND next_run_at <= ? "
            "AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY next_run_at LIMIT ?",
            (at, at, limit),
        )
        claimed = self._db.claim_each(
            candidates,
            "UPDATE tasks SET claimed_by = ?, claimed_until = ? "
            "WHERE user_id = ? AND id = ? AND state = 'active' AND next_run_at <= ? "
            f"AND (claimed_until IS NULL OR claimed_until < ?) RETURNING {_TASK_COLUMNS}",
            lambda candidate: (owner, until, candidate["user_id"], candidate["id"], at, at),
        )
        return [
            DueTask(user_id=candidate["user_id"], task=_task(row)) for candidate, row in claimed
        ]

    def finish_run(
        self,
        user_id: int,
        task_id: int,
        owner: str,
        run: dict[str, Any],
        next_run_at: datetime | None,
    ) -> TaskRunRow | None:
        """Record a claimed run (`due_at`, `started_at`, `output`, optional `tools_called`,
        `fallback_reason`, `late`), move the task to `next_run_at` (none: it is done)
        and drop the claim, in one transaction. None, and nothing written, when `owner`
        no longer holds the claim (it expired and another process took the run)."""
        with self._db.transaction() as db:
            moved = db.execute(
                "UPDATE tasks SET next_run_at = ?, claimed_by = NULL, claimed_until = NULL, "
                "state = CASE WHEN CAST(? AS TEXT) IS NULL AND state = 'active' "
                "THEN 'done' ELSE state END "
                "WHERE user_id = ? AND id = ? AND claimed_by = ?",
                (
                    utc_iso(next_run_at) if next_run_at else None,
                    utc_iso(next_run_at) if next_run_at else None,
                    user_id,
                    task_id,
                    owner,
                ),
            ).rowcount
            if not moved:
                return None
            row = db.execute(
                "INSERT INTO task_runs (task_id, user_id, due_at, started_at, finished_at, "
                "output, tools_called, fallback_reason, late) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (
                    task_id,
                    user_id,
                    run["due_at"],
                    run["started_at"],
                    now_iso(),
                    run["output"],
                    json.dumps(list(run.get("tools_called", [])), ensure_ascii=False),
                    run.get("fallback_reason"),
                    int(bool(run.get("late", False))),
                ),
            ).fetchone()
        return _run(row)

    def runs(self, user_id: int, task_id: int, limit: int) -> list[TaskRunRow]:
        """The task's last `limit` finished runs, oldest first."""
        if limit <= 0:
            return []
        rows = self._db.rows(
            "SELECT * FROM task_runs WHERE user_id = ? AND task_id = ? ORDER BY id DESC LIMIT ?",
            (user_id, task_id, limit),
        )
        return [_run(row) for row in reversed(rows)]

    def timezone(self, user_id: int) -> str | None:
        """The time zone the user chose (`set_timezone`), if any."""
        rows = self._db.rows("SELECT timezone FROM users WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else None

    def set_timezone(self, user_id: int, timezone: str) -> None:
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            db.execute("UPDATE users SET timezone = ? WHERE user_id = ?", (timezone, user_id))

    def forget(self, user_id: int) -> int:
        """Delete all of the user's tasks and their runs; how many tasks there were."""
        with self._db.transaction() as db:
            db.execute("DELETE FROM task_runs WHERE user_id = ?", (user_id,))
            return db.execute("DELETE FROM tasks WHERE user_id = ?", (user_id,)).rowcount
