"""One SQLite connection shared by the repositories: transactions, reads, migrations.

The connection is shared between threads behind a lock, so async callers go through
`asyncio.to_thread`. Writes that belong together run in one transaction; a
transaction opened inside another (same thread) becomes a savepoint of it, which is
how `RelationalStore.atomic()` lets one transaction span several repositories.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stores.relational.rows import placeholders
from stores.relational.schema import MIGRATIONS


class Database:
    def __init__(self, path: Path | str, busy_timeout_s: float = 10.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"
                )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction; nested inside another (same thread), a savepoint of it."""
        with self._lock:
            if self._depth:
                savepoint = f"nested_{self._depth}"
                self._db.execute(f"SAVEPOINT {savepoint}")
                self._depth += 1
                try:
                    yield self._db
                except BaseException:
                    self._db.execute(f"ROLLBACK TO {savepoint}")
                    self._db.execute(f"RELEASE {savepoint}")
                    raise
                finally:
                    self._depth -= 1
                self._db.execute(f"RELEASE {savepoint}")
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self._db.execute("COMMIT")

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def by_ids(self, table: str, user_id: int, ids: Sequence[int]) -> list[sqlite3.Row]:
        """The user's rows of `table` among `ids`, in the order of `ids`; others' ids and
        unknown ids are left out. Always by primary key (see `rows.placeholders`)."""
        if not ids:
            return []
        found = self.rows(
            f"SELECT * FROM {table} WHERE +user_id = ? AND id IN ({placeholders(ids)})",
            (user_id, *ids),
        )
        by_id = {row["id"]: row for row in found}
        return [by_id[record_id] for record_id in dict.fromkeys(ids) if record_id in by_id]

    def write_for_ids(self, statement: str, params: Sequence[Any], ids: Sequence[int]) -> None:
        """`statement` ending in `IN`, for the given ids, in its own transaction."""
        if ids:
            with self.transaction() as db:
                db.execute(f"{statement} ({placeholders(ids)})", (*params, *ids))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @property
    def schema_version(self) -> int:
        return self.rows("PRAGMA user_version")[0][0]


class Repository:
    """One entity's queries over the shared `Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db
