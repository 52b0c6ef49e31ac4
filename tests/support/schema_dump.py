"""The schema a store's migrations made, as text: what `tests/data/schema/<engine>.txt`
records, so a change to how the migrations are written cannot change what they make.

`python -m tests.support.schema_dump` writes both files again (after a new migration);
the PostgreSQL one needs the server at `TOPICA_TEST_POSTGRES`."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from stores.relational import RelationalStore

RECORDED = Path(__file__).resolve().parents[1] / "data" / "schema"

SQLITE = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
POSTGRES_COLUMNS = """
    SELECT table_name, ordinal_position, column_name, data_type, is_nullable,
           column_default, is_identity, identity_generation, generation_expression
    FROM information_schema.columns WHERE table_schema = ?
    ORDER BY table_name, ordinal_position"""
POSTGRES_CONSTRAINTS = """
    SELECT t.relname, c.conname, c.contype, pg_get_constraintdef(c.oid)
    FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = ? ORDER BY t.relname, c.conname"""
POSTGRES_INDEXES = """
    SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = ?
    ORDER BY tablename, indexname"""
POSTGRES_MIGRATIONS = "SELECT version FROM schema_migrations ORDER BY version"


def schema_text(store: RelationalStore) -> str:
    """Every table, column, constraint, index and trigger of the store, one a line; the
    PostgreSQL schema's own name written as `{schema}`."""
    if store.db.engine == "sqlite":
        rows = [("user_version", store.schema_version), *store.db.rows(SQLITE)]
        return "".join(f"{tuple(row)!r}\n" for row in rows)
    schema = store.db.schema
    lines = []
    for query in (POSTGRES_COLUMNS, POSTGRES_CONSTRAINTS, POSTGRES_INDEXES):
        lines += [repr(tuple(row)) for row in store.db.rows(query, (schema,))]
    lines += [repr(tuple(row)) for row in store.db.rows(POSTGRES_MIGRATIONS)]
    return "".join(line.replace(schema, "{schema}") + "\n" for line in lines)


def _write(engine: str, store: RelationalStore) -> None:
    try:
        (RECORDED / f"{engine}.txt").write_text(schema_text(store), encoding="utf-8")
    finally:
        store.close()


def main() -> None:
    from stores.relational.postgres import PostgresDatabase
    from tests.support.postgres import postgres_test_database

    RECORDED.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        _write("sqlite", RelationalStore(Path(folder) / "topica.sqlite3"))
    server = os.environ.get("TOPICA_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432")
    with postgres_test_database(server) as url:
        if url is None:
            sys.exit(f"no PostgreSQL server answers at {server}")
        _write("postgres", RelationalStore(PostgresDatabase(url, schema="topica_schema_record")))


if __name__ == "__main__":
    main()
