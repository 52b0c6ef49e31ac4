"""The tables of scheduled tasks and of offered reminders, in either engine's types
(migrations of `stores.relational.schema` and `stores.relational.postgres_schema`)."""

from __future__ import annotations


def task_tables(identity: str, integer: str) -> str:
    """The migration of scheduled tasks, their runs and each user's time zone, in one
    engine's types: `identity` an id column's type, `integer` a user or task id's."""
    return f"""
    ALTER TABLE users ADD COLUMN timezone TEXT;
    CREATE TABLE tasks (
        id {identity},
        user_id {integer} NOT NULL,
        request TEXT NOT NULL,
        rule TEXT,
        timezone TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'done', 'cancelled')),
        next_run_at TEXT,
        created_at TEXT NOT NULL,
        claimed_by TEXT,
        claimed_until TEXT
    );
    CREATE INDEX tasks_user ON tasks(user_id, id);
    CREATE INDEX tasks_due ON tasks(next_run_at) WHERE state = 'active';
    CREATE TABLE task_runs (
        id {identity},
        task_id {integer} NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        user_id {integer} NOT NULL,
        due_at TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        output TEXT NOT NULL,
        tools_called TEXT NOT NULL DEFAULT '[]',
        fallback_reason TEXT,
        late INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX task_runs_task ON task_runs(user_id, task_id, id);
    """


REMINDER_OFFERS = """
    CREATE TABLE reminder_offers (
        id {identity},
        user_id {integer} NOT NULL,
        message_id {integer} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        request TEXT NOT NULL CHECK (length(trim(request)) > 0),
        said_when TEXT NOT NULL,
        due_at TEXT NOT NULL,
        rule TEXT,
        timezone TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'offered'
            CHECK (state IN ('offered', 'accepted', 'dismissed')),
        sent_at TEXT,
        task_id {integer},
        created_at TEXT NOT NULL,
        UNIQUE (user_id, message_id, request)
    );
    CREATE INDEX reminder_offers_user ON reminder_offers(user_id, id);
    CREATE INDEX reminder_offers_unsent ON reminder_offers(due_at) WHERE sent_at IS NULL;
    """
"""Migration of reminders offered for a commitment the Archivist found: the user's
message it was said in (the offer goes with it), the request, the time as said and as
read (`due_at`, UTC; `rule` when it repeats), and whether it was sent and answered."""
