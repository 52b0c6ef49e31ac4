"""A PostgreSQL database of the test session's own on the local server, and the migrated
schema its tests take in turn."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from stores.relational.postgres import PostgresDatabase
from tests.support.schema_dump import POSTGRES_COLUMNS, POSTGRES_CONSTRAINTS, POSTGRES_INDEXES

SPARE = "test_migrated_spare"
"""The migrated, empty schema waiting for the next test."""

MIGRATION_TABLE = (
    "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'schema_migrations'"
)
TABLES = (
    "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> 'schema_migrations'"
)
SEQUENCES = (
    "SELECT sequencename, start_value FROM pg_sequences "
    "WHERE schemaname = %s AND last_value IS NOT NULL"
)
DROP = (
    "import sys, psycopg; "
    "psycopg.connect(sys.argv[1], autocommit=True)"
    ".execute(f'DROP DATABASE IF EXISTS {sys.argv[2]} WITH (FORCE)')"
)
_dropping: list[subprocess.Popen[bytes]] = []
"""The background drops of this process (kept, so that none is reported still running
while the session ends)."""


@contextmanager
def postgres_test_database(server: str) -> Iterator[str | None]:
    """A new database on `server` (a URL without a database), dropped afterwards; None
    when no server answers there. The drop runs in a process of its own that the
    session does not wait for: dropping a database waits for a checkpoint."""
    name = f"topica_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        yield None
        return
    with admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{server}/{name}"
    finally:
        _dropping.append(
            subprocess.Popen(
                [sys.executable, "-c", DROP, f"{server}/postgres", name],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )


class MigratedSchemas:
    """Migrated schemas for the tests of one database: each test gets an empty one under
    its own name, so the store it opens finds every migration applied (one migration a
    session instead of one a test). After the test the schema is emptied (its rows
    deleted, identities restarted) and kept for the next test if it still has the
    shape the migrations made; a schema changed in any other way is left as it is, and
    the next test gets a freshly migrated one."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._admin = psycopg.connect(url, autocommit=True)
        self._admin.execute("SET lock_timeout = '2s'")
        self._migrated_shape: str | None = None

    def lend(self, schema: str) -> None:
        """`schema`, migrated and empty (unless a schema of that name exists)."""
        if self._exists(schema):
            return
        if not self._exists(SPARE):
            PostgresDatabase(self._url, SPARE, pool_size=1).close()
            self._migrated_shape = self._shape(SPARE)
        self._admin.execute(f"ALTER SCHEMA {SPARE} RENAME TO {schema}")

    def take_back(self, schema: str) -> None:
        """`schema`, emptied, as the next test's; left alone if its shape changed or one
        of its tables stays locked."""
        if self._exists(SPARE) or not self._exists(schema):
            return
        if self._shape(schema) != self._migrated_shape:
            return
        try:
            with self._admin.transaction():
                self._empty(schema)
                self._admin.execute(f"ALTER SCHEMA {schema} RENAME TO {SPARE}")
        except (psycopg.errors.LockNotAvailable, psycopg.errors.ForeignKeyViolation):
            return

    def _empty(self, schema: str) -> None:
        """Delete every row of the schema's tables (a table referred to after the tables
        referring to it) and restart its identities: as `TRUNCATE … RESTART IDENTITY`
        leaves them, without a new file for every table and index."""
        tables = [row[0] for row in self._admin.execute(TABLES, (schema,))]
        filled = self._admin.execute(
            " UNION ALL ".join(
                f"SELECT %s WHERE EXISTS (SELECT FROM {schema}.{table})" for table in tables
            ),
            tables,
        )
        remaining = [row[0] for row in filled]
        while remaining:
            refused = []
            for table in remaining:
                try:
                    with self._admin.transaction():
                        self._admin.execute(f"DELETE FROM {schema}.{table}")
                except psycopg.errors.ForeignKeyViolation:
                    refused.append(table)
            if refused == remaining:
                raise psycopg.errors.ForeignKeyViolation(f"rows of {schema} refer to each other")
            remaining = refused
        for name, start in self._admin.execute(SEQUENCES, (schema,)).fetchall():
            self._admin.execute(f"SELECT setval('{schema}.{name}', %s, false)", (start,))

    def close(self) -> None:
        self._admin.close()

    def _exists(self, schema: str) -> bool:
        query = "SELECT 1 FROM pg_namespace WHERE nspname = %s"
        return self._admin.execute(query, (schema,)).fetchone() is not None

    def _shape(self, schema: str) -> str:
        """The schema's columns, constraints, indexes and applied migrations, its own
        name written as `{schema}`."""
        lines = []
        if not self._admin.execute(MIGRATION_TABLE, (schema,)).fetchone():
            return ""
        for query in (POSTGRES_COLUMNS, POSTGRES_CONSTRAINTS, POSTGRES_INDEXES):
            rows = self._admin.execute(query.replace("?", "%s"), (schema,))
            lines += [repr(tuple(row)) for row in rows]
        rows = self._admin.execute(f"SELECT version FROM {schema}.schema_migrations ORDER BY 1")
        lines += [repr(tuple(row)) for row in rows]
        return "\n".join(lines).replace(schema, "{schema}")
