"""Moving a deployment over: every relational row of a SQLite store copied into PostgreSQL.

Rows keep their ids, so a shared Chroma server's vectors (keyed by record id) stay valid;
with a local Chroma, `topica reindex` rebuilds them on the new side. All tables are copied
in one transaction, parents before children, so a copy stopped part-way (killed, the
connection lost) leaves the target as empty as it was and can simply be run again; the
target must be empty (copying twice would double nothing, but would hide a mistake), and
after the copy each table's row count is compared on both sides. LangGraph checkpoints
are not copied: a run in flight starts again from its messages, which are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.errors import StoreError
from stores.relational import RelationalStore

TABLES: tuple[str, ...] = (
    "users",
    "topics",
    "messages",
    "facts",
    "fact_history",
    "people",
    "session_summaries",
    "answers",
    "deliveries",
    "attachments",
    "passages",
    "message_edits",
    "stale_topics",
    "vector_pending",
    "vector_index",
    "conversation_titles",
    "tasks",
    "task_runs",
    "reminder_offers",
)
"""Every table of the store, parents first (messages point at topics, answers at
messages, passages at attachments, task runs at tasks, reminder offers at messages); the
full-text indexes are rebuilt by the target's triggers."""

IDENTITIES = ("topics", "messages", "facts", "fact_history", "people", "attachments",
              "passages", "message_edits", "tasks", "task_runs", "reminder_offers")  # fmt: skip
BATCH = 1000


@dataclass(frozen=True)
class CopiedTable:
    table: str
    source_rows: int
    target_rows: int

    @property
    def verified(self) -> bool:
        return self.source_rows == self.target_rows


def copy_store(
    source: RelationalStore,
    target: RelationalStore,
    progress: Callable[[str, int], None] | None = None,
) -> list[CopiedTable]:
    """Copy every row of `source` into the empty `target` in one transaction (all or
    nothing); each table's counts compared."""
    busy = [table for table in TABLES if _count(target, table)]
    if busy:
        raise StoreError(f"the target store is not empty (rows in {', '.join(busy)})")
    with target.db.transaction() as db:
        for table in TABLES:
            columns = [row[1] for row in source.db.rows(f"PRAGMA table_info({table})")]
            rows = source.db.rows(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid")
            marks = ", ".join("?" for _ in columns)
            statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            for start in range(0, len(rows), BATCH):
                db.executemany(statement, [tuple(row) for row in rows[start : start + BATCH]])
                if progress is not None:
                    progress(table, min(start + BATCH, len(rows)))
            if table in IDENTITIES:  # new rows continue after the copied ids
                db.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"COALESCE((SELECT max(id) FROM {table}), 0) + 1, false)"
                )
    return [CopiedTable(table, _count(source, table), _count(target, table)) for table in TABLES]


def _count(store: RelationalStore, table: str) -> int:
    return store.db.rows(f"SELECT count(*) FROM {table}")[0][0]
