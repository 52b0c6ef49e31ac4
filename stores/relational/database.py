"""The database the repositories share: transactions, reads, migrations, full-text search.

Two engines implement it: `SqliteDatabase` here (one file, the default) and
`stores.relational.postgres.PostgresDatabase` (a shared server, for replicas). The
repositories write portable SQL with `?` parameters and call the engine for the parts
that differ: full-text search (`fulltext`) and taking a user's write lock (`lock_user`).

Writes that belong together run in one transaction; a transaction opened inside
another (same thread) becomes a savepoint of it, which is how
`RelationalStore.atomic()` lets one transaction span several repositories. SQLite's one
connection is shared between threads behind a lock, so async callers go through
`asyncio.to_thread`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from core.errors import StoreError
from stores.fulltext import user_match_expression, user_words
from stores.relational.fts5_ranking import match_probe, rank_plan
from stores.relational.rows import placeholders, stored_ids
from stores.relational.schema import MIGRATIONS, statements

RANKED_PAGE = 50
"""The fewest rows the full-text index ranks before the table checks them (`fulltext`)."""


@dataclass(frozen=True)
class FullTextQuery:
    """A full-text search of one user's rows of `table` (`Database.fulltext`)."""

    table: str
    user_id: int
    text: str
    limit: int
    where: str = ""
    params: Sequence[Any] = ()
    narrow: bool = False


class Database:
    """What every engine offers the repositories (SQL with `?` parameters)."""

    path: str
    engine: str
    _match_probe: Callable[[str, int, str, str], tuple[str, list[Any]] | None]

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction (a savepoint inside another); yields a connection whose
        `execute(sql, params)` returns a cursor (`fetchone`, `fetchall`, `rowcount`)."""
        raise NotImplementedError

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of a query; each reads by position and by column name."""
        raise NotImplementedError

    def fulltext(
        self,
        table: str,
        user_id: int,
        text: str,
        limit: int,
        where: str = "",
        params: Sequence[Any] = (),
        narrow: bool = False,
    ) -> list[tuple[int, float]]:
        """BM25 over the user's rows of `table` (its full-text column): (id, score), best
        first, larger is better. `where` adds conditions on the row (`r`), with `params`;
        `narrow` says they keep only a small part of the user's rows (one segment), so an
        engine that ranks before it filters should filter first."""
        return self._ranked(FullTextQuery(table, user_id, text, limit, where, params, narrow))

    def _ranked(self, query: FullTextQuery) -> list[tuple[int, float]]:
        """The engine's `fulltext`."""
        raise NotImplementedError

    def matching_each(
        self, table: str, user_id: int, texts: Sequence[str], where: str = ""
    ) -> list[bool]:
        """For each of `texts`, whether one of the user's rows of `table` that pass `where`
        (SQL on the row `r`) matches it as `fulltext` would, unranked: one statement, an
        index probe (the engine's `_match_probe`) a text with content words."""
        probes = [self._match_probe(table, user_id, text, where) for text in texts]
        held = iter(self.exists_each([probe for probe in probes if probe is not None]))
        return [probe is not None and next(held) for probe in probes]

    def exists_each(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[bool]:
        """For each (query, its parameters), whether it returns a row: one statement (no
        row for a parameter past 64 bits, `_fetch`: then none does)."""
        sql = "SELECT " + ", ".join(f"EXISTS ({query})" for query, _ in queries)
        values = [value for _, params in queries for value in params]
        rows = self.rows(sql, values) if queries else []
        return [bool(held) for held in rows[0]] if rows else [False] * len(queries)

    def lock_user(self, db: Any, user_id: int) -> None:
        """Inside a transaction: hold the user's write lock until it ends (so two
        processes never number one user's messages at once)."""

    def close(self) -> None:
        raise NotImplementedError

    @property
    def schema_version(self) -> int:
        raise NotImplementedError

    def by_ids(self, table: str, user_id: int, ids: Sequence[int]) -> list[Any]:
        """The user's rows of `table` among `ids`, in the order of `ids`; others' ids and
        unknown ids (any outside 64-bit integers too) are left out."""
        ids = stored_ids(ids)
        by_id = {row["id"]: row for row in self._of_user(table, "*", user_id, ids)}
        return [by_id[record_id] for record_id in dict.fromkeys(ids) if record_id in by_id]

    def one_of_user(self, table: str, noun: str, user_id: int, record_id: int) -> Any:
        """The user's row `record_id` of `table`; `StoreError` ("<noun> <id> not found for
        user <user_id>") when the user has none such."""
        found = self.by_ids(table, user_id, [record_id])
        if not found:
            raise StoreError(f"{noun} {record_id} not found for user {user_id}")
        return found[0]

    def owned_ids(self, table: str, user_id: int, ids: Sequence[int]) -> set[int]:
        """Those of `ids` that are the user's rows of `table` (`by_ids` without reading
        the rows: a check that only needs to know whose they are)."""
        return {row[0] for row in self._of_user(table, "id", user_id, stored_ids(ids))}

    def _of_user(self, table: str, columns: str, user_id: int, ids: list[int]) -> list[Any]:
        """`columns` of the user's rows of `table` among `ids` (already `stored_ids`), in no
        particular order. Always by primary key (see `rows.placeholders`)."""
        query = f"SELECT {columns} FROM {table} WHERE +user_id = ? AND id IN"
        return self.rows_in(query, user_id, ids)

    def rows_in(self, query: str, user_id: int, ids: Sequence[int], then: str = "") -> list[Any]:
        """The rows of `query`, whose one parameter is `user_id` and which ends in `IN`, for
        `ids` (no rows for none), with `then` (an `ORDER BY`) after the list."""
        if not ids:
            return []
        return self.rows(f"{query} ({placeholders(ids)}) {then}", (user_id, *ids))

    def holding(self, user_id: int, tables: Sequence[str]) -> set[str]:
        """Those of `tables` that hold at least one of the user's rows, in one statement
        (each an index probe: every table named here is indexed by `user_id` first)."""
        tables = list(dict.fromkeys(tables))
        probes = [(f"SELECT 1 FROM {table} WHERE user_id = ?", [user_id]) for table in tables]
        held = self.exists_each(probes)
        return {table for table, holds in zip(tables, held, strict=True) if holds}

    def claim_each(
        self, candidates: Sequence[Any], statement: str, params: Callable[[Any], Sequence[Any]]
    ) -> list[tuple[Any, Any]]:
        """Run `statement` (an `UPDATE ... RETURNING` that claims one row) with
        `params(candidate)` for each candidate, each in its own transaction: (candidate,
        returned row) for those it claimed; one another caller claimed first is left out."""
        claimed: list[tuple[Any, Any]] = []
        for candidate in candidates:
            with self.transaction() as db:
                row = db.execute(statement, params(candidate)).fetchone()
            if row is not None:
                claimed.append((candidate, row))
        return claimed

    def write_for_ids(self, statement: str, params: Sequence[Any], ids: Sequence[int]) -> None:
        """`statement` ending in `IN`, for the given ids, in its own transaction."""
        ids = stored_ids(ids)
        if ids:
            with self.transaction() as db:
                db.execute(f"{statement} ({placeholders(ids)})", (*params, *ids))


class SqliteDatabase(Database):
    engine = "sqlite"

    def __init__(self, path: Path | str, busy_timeout_s: float = 10.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._writer: int | None = None  # the thread inside a transaction, if any
        self._readers = threading.local()
        self._reader_connections: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()  # not `_lock`: a writer may hold that one
        self._busy_timeout_s = busy_timeout_s
        self._closed = False
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s
        )
        self._db.row_factory = sqlite3.Row
        # The full-text triggers index each word behind its user's tag (migration 11).
        self._db.create_function("topica_words", 2, user_words, deterministic=True)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        self._set_up(busy_timeout_s)

    def _set_up(self, busy_timeout_s: float) -> None:
        """WAL mode and the migrations, tried again while another process sets the file up.

        While another connection switches a new file to WAL (or recovers its WAL index),
        SQLite answers SQLITE_BUSY at once, without its busy handler (which could deadlock
        there): seen as 1 `database is locked` in 24 processes opening 12 new data
        directories in pairs. Both steps are idempotent, so they are simply run again
        until the busy timeout has passed."""
        deadline = time.monotonic() + busy_timeout_s
        while True:
            try:
                if self.path != ":memory:":
                    self._db.execute("PRAGMA journal_mode = WAL")
                self._migrate()
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def _migrate(self) -> None:
        """Apply the migrations this file lacks, safe against other processes doing the same.

        The version is read again inside the write transaction (`BEGIN IMMEDIATE` waits
        for any other migrating process), so of two processes opening a new data
        directory at once one migrates and the other finds the work done. The statements
        run one by one: `executescript` would commit the transaction first."""
        with self._lock:
            if self.schema_version >= len(MIGRATIONS):
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                version = self.schema_version
                for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                    for statement in statements(script):
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number}")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

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
            self._writer = threading.get_ident()
            try:
                yield self._db
            except OverflowError as error:
                self._db.execute("ROLLBACK")
                raise StoreError(f"unknown id: {error}") from error
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
                self._writer = None
            self._db.execute("COMMIT")

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """The rows of a query on the shared connection (`_fetch`)."""
        with self._lock:
            return self._fetch(self._db, sql, params)

    @staticmethod
    def _fetch(connection: sqlite3.Connection, sql: str, params: Iterable[Any]) -> list[Any]:
        """The rows of a query. A parameter outside SQLite's integer range matches no row:
        no id can be that large (`core.records.ID_RANGE`)."""
        try:
            return connection.execute(sql, tuple(params)).fetchall()
        except OverflowError:
            return []

    def _ranked(self, query: FullTextQuery) -> list[tuple[int, float]]:
        """FTS5's bm25, negated. The index reads only the user's words (each is indexed
        behind its user's tag: `stores.fulltext.user_words`); the rows found are still
        checked against `user_id` (and `where`) on the table itself.

        The index ranks first and the table checks only the best `RANKED_PAGE` rows it
        gives, so no match is joined to its row before it is ranked. Should the check
        drop so many that fewer than `limit` are left, the index gives a page four times
        as long, until it has no more. A `narrow` filter (one segment of a long history)
        would drop most of any page, so there the rows are checked before they are ranked.

        A term that matches `COMMON_MATCHES` of the user's rows or more scores only the
        rows that also hold a rarer term of the query (`rank_plan`), unless those are
        fewer than the page; a `narrow` search ranks every match."""
        table, user_id, text, limit, where, params, narrow = astuple(query)
        index = f"{table}_fts"
        if narrow:
            expression = user_match_expression(user_id, text)
            if expression is None:
                return []
            sql = (
                f"SELECT r.id, -bm25({index}) AS score FROM {index} "
                f"JOIN {table} r ON r.id = {index}.rowid "
                f"WHERE {index} MATCH ? AND r.user_id = ? {where} ORDER BY score DESC, r.id LIMIT ?"
            )
            rows = self._read(sql, (expression, user_id, *params, limit))
            return [(row[0], row[1]) for row in rows]
        ranking = rank_plan(self._read, index, user_id, text)
        if ranking is None:
            return []
        page = max(limit, RANKED_PAGE)
        while True:
            ranked = ranking.best(self._read, page)
            kept = self._kept(table, user_id, ranked, where, params)
            if len(kept) >= limit or len(ranked) < page:
                return kept[:limit]
            page *= 4

    _match_probe = staticmethod(match_probe)

    def _kept(
        self,
        table: str,
        user_id: int,
        ranked: list[tuple[int, float]],
        where: str,
        params: Sequence[Any],
    ) -> list[tuple[int, float]]:
        """Those of the index's `ranked` rows that `table` stores as the user's and that
        pass `where`, in the same order."""
        if not ranked:
            return []
        ids = [row_id for row_id, _ in ranked]
        rows = self._read(
            f"SELECT r.id FROM {table} r WHERE r.id IN ({placeholders(ids)}) "
            f"AND +r.user_id = ? {where}",
            (*ids, user_id, *params),
        )
        kept = {row[0] for row in rows}
        return [(row_id, score) for row_id, score in ranked if row_id in kept]

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """A query on this thread's reader (`_reader`), or on the shared connection."""
        reader = self._reader()
        return self.rows(sql, params) if reader is None else self._fetch(reader, sql, params)

    def _reader(self) -> sqlite3.Connection | None:
        """This thread's read-only connection, for the full-text queries: in WAL mode
        readers run beside one another and beside the writer, and SQLite lets go of
        Python's GIL while it steps a statement, so a search's full-text queries over topics
        and over messages run at once on two cores instead of one after the other behind
        the shared connection's lock. Each
        statement reads what was committed when it began. None where a reader would not
        see the same data: an in-memory database, or this thread inside a transaction (its
        uncommitted writes)."""
        if self.path == ":memory:" or self._closed or self._writer == threading.get_ident():
            return None
        reader = getattr(self._readers, "connection", None)
        if reader is None:
            reader = sqlite3.connect(
                f"{Path(self.path).resolve().as_uri()}?mode=ro",
                uri=True,
                check_same_thread=False,
                timeout=self._busy_timeout_s,
            )
            with self._readers_lock:
                self._reader_connections.append(reader)
            self._readers.connection = reader
        return reader

    def close(self) -> None:
        with self._lock, self._readers_lock:
            self._closed = True
            for reader in self._reader_connections:
                reader.close()
            self._reader_connections.clear()
            self._readers = threading.local()
            self._db.close()

    @property
    def schema_version(self) -> int:
        return self.rows("PRAGMA user_version")[0][0]


class Repository:
    """One entity's queries over the shared `Database`."""

    def __init__(self, db: Database) -> None:
        self._db = db
