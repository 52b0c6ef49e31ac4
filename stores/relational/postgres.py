"""The PostgreSQL engine of the relational store (`TOPICA_DATABASE_URL=postgresql://…`).

Several processes (bot replicas, workers) share one database. Connections come from a
psycopg 3 pool; a transaction holds one connection for its thread until it ends, and a
transaction opened inside it (same thread) is a savepoint. Reads outside a transaction
take any pooled connection in autocommit mode.

The repositories' SQL is portable (`?` parameters, `ON CONFLICT`, `RETURNING`); this
module turns `?` into psycopg's `%s`. What differs is here: migrations under an advisory
lock (replicas starting at once), the user's write lock (a row lock on `users`), and
BM25 full-text search over `tsvector` columns (`fulltext`), scored like FTS5's bm25 so
that the relevance floors keep their meaning on either engine.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from core.errors import StoreError
from stores.fulltext import COMMON_MATCHES, bm25_idf, bm25_term, query_stems
from stores.relational.database import RANKED_PAGE, Database, FullTextQuery
from stores.relational.postgres_schema import MIGRATIONS, SET_UP

MIGRATION_LOCK = 0x70_71_CA_00
"""Advisory lock key taken while migrating: one process migrates, the others wait and
then find the work done (the key is shared by every schema of the database, since the
extensions they set up are per database)."""

_PARAMETER = re.compile(r"\?")
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""A schema name written into SQL as it is (`TOPICA_DATABASE_SCHEMA`, `copy --schema`)."""
RESERVED_WORDS = frozenset({
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric",
    "authorization", "binary", "both", "case", "cast", "check", "collate", "collation",
    "column", "concurrently", "constraint", "create", "cross", "current_catalog",
    "current_date", "current_role", "current_schema", "current_time", "current_timestamp",
    "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except",
    "false", "fetch", "for", "foreign", "freeze", "from", "full", "grant", "group", "having",
    "ilike", "in", "initially", "inner", "intersect", "into", "is", "isnull", "join",
    "lateral", "leading", "left", "like", "limit", "localtime", "localtimestamp", "natural",
    "not", "notnull", "null", "offset", "on", "only", "or", "order", "outer", "overlaps",
    "placing", "primary", "references", "returning", "right", "select", "session_user",
    "similar", "some", "symmetric", "system_user", "table", "tablesample", "then", "to",
    "trailing", "true", "union", "unique", "user", "using", "variadic", "verbose", "when",
    "where", "window", "with",
})  # fmt: skip
"""PostgreSQL's reserved key words: not a schema name written as it is."""


def check_schema_name(schema: str) -> None:
    """Raises `StoreError` for a name that is no plain schema of Topica's own: not of
    `SCHEMA_NAME`'s shape, a reserved word, or a system schema (`pg_…`,
    `information_schema`)."""
    if not SCHEMA_NAME.fullmatch(schema):
        raise StoreError(f"not a schema name: {schema!r} (lower-case letters, digits, _)")
    if schema in RESERVED_WORDS:
        raise StoreError(f"not a schema name: {schema!r} is a reserved word")
    if schema.startswith("pg_") or schema == "information_schema":
        raise StoreError(f"not a schema name: {schema!r} is a system schema")


def redacted(url: str) -> str:
    """`url` without its password, for logs and `path`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class Row(tuple):
    """A result row read by position or by column name (like `sqlite3.Row`)."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


INTERNAL_COLUMNS = frozenset({"tsv", "fts_tokens"})
"""The generated full-text columns: searched in SQL, never part of a record."""


def _row_factory(cursor: psycopg.Cursor[Any]) -> Any:
    described = list(cursor.description or ())
    if not any(column.name in INTERNAL_COLUMNS for column in described):
        names = {column.name: index for index, column in enumerate(described)}
        return lambda values: Row(values, names)
    kept = [i for i, column in enumerate(described) if column.name not in INTERNAL_COLUMNS]
    names = {described[i].name: position for position, i in enumerate(kept)}
    return lambda values: Row([values[i] for i in kept], names)


def _sql(statement: str) -> str:
    return _PARAMETER.sub("%s", statement.replace("%", "%%"))


class _Connection:
    """A pooled connection that takes the repositories' `?` parameters."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.raw = connection

    def execute(self, statement: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.raw.execute(_sql(statement), tuple(params))

    def executemany(self, statement: str, params: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(row) for row in params]
        if rows:
            with self.raw.cursor() as cursor:
                cursor.executemany(_sql(statement), rows)


class PostgresDatabase(Database):
    engine = "postgresql"

    def __init__(
        self, url: str, schema: str = "public", pool_size: int = 8, timeout_s: float = 10.0
    ) -> None:
        check_schema_name(schema)
        self.path = redacted(url)
        self._url = url
        self.schema = schema
        self._local = threading.local()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            timeout=timeout_s,
            kwargs={
                "autocommit": True,
                "row_factory": _row_factory,
                "options": f"-c search_path={schema},public",
            },
            name=f"topica-{schema}",
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except psycopg.Error as error:
            self._pool.close()
            raise StoreError(f"cannot reach PostgreSQL at {self.path}: {error}") from error
        self._migrate()

    def _migrate(self) -> None:
        """Set up and apply the missing migrations, one process at a time."""
        with self._pool.connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            connection.execute(SET_UP.format(schema=self.schema))
            done = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
            for number, script in enumerate(MIGRATIONS, start=1):
                if number not in done:
                    connection.execute(script)
                    connection.execute(
                        "INSERT INTO schema_migrations (version) VALUES (%s)", (number,)
                    )

    @contextmanager
    def _connection(self) -> Iterator[_Connection]:
        """The thread's transaction connection, or a pooled one for this call."""
        current = getattr(self._local, "connection", None)
        if current is not None:
            yield current
            return
        with self._pool.connection() as connection:
            yield _Connection(connection)

    @contextmanager
    def transaction(self) -> Iterator[_Connection]:
        current = getattr(self._local, "connection", None)
        if current is not None:
            with current.raw.transaction():
                yield current
            return
        with self._pool.connection() as raw:
            connection = _Connection(raw)
            self._local.connection = connection
            try:
                with raw.transaction():
                    yield connection
            except pg_errors.NumericValueOutOfRange as error:
                raise StoreError(f"unknown id: {error}") from error
            except pg_errors.IntegrityError as error:  # a CHECK, NOT NULL or key refused it
                raise StoreError(f"refused by the store: {error}") from error
            finally:
                self._local.connection = None

    def rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The rows of a query. A parameter past 64-bit integers matches no row."""
        with self._connection() as connection:
            try:
                return connection.execute(sql, tuple(params)).fetchall()
            except pg_errors.NumericValueOutOfRange:
                return []

    def rows_in(self, query: str, user_id: int, ids: Sequence[int], then: str = "") -> list[Any]:
        """As `Database.rows_in`, with the ids as one array parameter (`= ANY`): a list
        of thousands of parameters takes the server longer to plan than to read."""
        if not ids:
            return []
        listed = f"{query.removesuffix('IN')}= ANY(?::bigint[]) {then}"
        return self.rows(listed, (user_id, list(ids)))

    def lock_user(self, db: Any, user_id: int) -> None:
        db.execute("SELECT 1 FROM users WHERE user_id = ? FOR UPDATE", (user_id,))

    def _match_probe(
        self, table: str, user_id: int, text: str, where: str
    ) -> tuple[str, list[Any]] | None:
        stems = query_stems(text)
        if not stems:
            return None
        sql = (
            f"SELECT 1 FROM {table} r "
            f"WHERE r.user_id = ? AND r.tsv @@ to_tsquery('topica', ?) {where}"
        )
        return sql, [user_id, " | ".join(f"{stem}:*" for stem in stems)]

    def _ranked(self, query: FullTextQuery) -> list[tuple[int, float]]:
        """BM25 (FTS5's formula and constants) over the user's rows matching any stem as a
        prefix: document frequencies, count and mean length among the user's rows, term
        frequencies from each matching row's `tsvector` positions. The statistics are the
        user's own, never other users'. Rows are filtered before they are ranked, `narrow`
        or not. Common terms (`COMMON_MATCHES`) count as in the SQLite engine: unless
        `narrow`, a row holding only common terms is left out when the rows holding a
        rarer term fill a page (`RANKED_PAGE`, or `limit` if larger)."""
        table, user_id, text, limit, where, params, narrow = astuple(query)
        stems = query_stems(text)
        if not stems:
            return []
        query = " | ".join(f"{stem}:*" for stem in stems)
        per_stem = ", ".join(
            "count(*) FILTER (WHERE r.tsv @@ to_tsquery('topica', ?))" for _ in stems
        )
        stats = self.rows(
            f"SELECT count(*), COALESCE(avg(r.fts_tokens), 0), {per_stem} "
            f"FROM {table} r WHERE r.user_id = ? {where}",
            (*(f"{stem}:*" for stem in stems), user_id, *params),
        )[0]
        total, mean_length = stats[0], float(stats[1]) or 1.0
        if not total:
            return []
        idf = [bm25_idf(total, frequency) for frequency in stats[2:]]
        matches = self.rows(
            "SELECT r.id, r.fts_tokens AS length, t.position, sum(array_length(l.positions, 1)) "
            f"FROM {table} r CROSS JOIN LATERAL unnest(r.tsv) l "
            "JOIN (SELECT u.position, (tsvector_to_array(to_tsvector('topica', u.stem)))[1] "
            "AS lexeme FROM unnest(?::text[]) WITH ORDINALITY AS u(stem, position)) t "
            "ON starts_with(l.lexeme, t.lexeme) "
            f"WHERE r.user_id = ? AND r.tsv @@ to_tsquery('topica', ?) {where} "
            "GROUP BY r.id, r.fts_tokens, t.position",
            (list(stems), user_id, query, *params),
        )
        scores: dict[int, float] = {}
        common = {n + 1 for n, count in enumerate(stats[2:]) if count >= COMMON_MATCHES}
        rare_rows: set[int] = set()
        for record_id, length, position, frequency in matches:
            score = bm25_term(idf[position - 1], frequency, length, mean_length)
            scores[record_id] = scores.get(record_id, 0.0) + score
            if position not in common:
                rare_rows.add(record_id)
        if common and not narrow and len(rare_rows) >= max(limit, RANKED_PAGE):
            scores = {record_id: scores[record_id] for record_id in rare_rows}
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return best[:limit]

    def connect(self) -> psycopg.Connection[Any]:
        """A connection of its own, outside the pool (for session advisory locks)."""
        return psycopg.connect(self._url, autocommit=True, connect_timeout=10)

    def drop_schema(self) -> None:
        """Drop this store's schema and everything in it (temporary stores: evaluations)."""
        with self._connection() as connection:
            connection.raw.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    def close(self) -> None:
        self._pool.close()

    @property
    def schema_version(self) -> int:
        return self.rows("SELECT COALESCE(max(version), 0) FROM schema_migrations")[0][0]
