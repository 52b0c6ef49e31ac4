"""A PostgreSQL database of the test session's own on the local server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


@contextmanager
def postgres_test_database(server: str) -> Iterator[str | None]:
    """A new database on `server` (a URL without a database), dropped afterwards; None
    when no server answers there."""
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
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
