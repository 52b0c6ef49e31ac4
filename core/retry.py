"""The one retry policy of graph nodes that touch storage.

A locked database or a Chroma server restarting is worth another try; every node that
gets this policy only reads, or writes idempotently (saved topics are found again, the
answer's id is tied to the question's), so a retried attempt changes nothing twice.
"""

from __future__ import annotations

import sqlite3

from langgraph.types import RetryPolicy


def _postgres_transient() -> tuple[type[Exception], ...]:
    """PostgreSQL's passing troubles (a dropped connection, a deadlock or serialization
    failure), when its driver (the `postgres` extra) is installed."""
    try:
        from psycopg import OperationalError
        from psycopg.errors import DeadlockDetected, SerializationFailure
    except ImportError:
        return ()
    return (OperationalError, DeadlockDetected, SerializationFailure)


TRANSIENT_STORAGE_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.OperationalError,
    ConnectionError,
    *_postgres_transient(),
)
"""A locked or busy SQLite database or PostgreSQL's passing troubles; a vector or
embedding endpoint that dropped a connection (`VectorStoreUnavailable` is a
`ConnectionError`)."""

STORAGE_RETRY = RetryPolicy(
    max_attempts=3,
    initial_interval=0.5,
    backoff_factor=2.0,
    retry_on=TRANSIENT_STORAGE_ERRORS,
)
