"""The one retry policy of graph nodes that touch storage.

A locked database or a Chroma server restarting is worth another try; every node that
gets this policy only reads, or writes idempotently (saved topics are found again, the
answer's id is tied to the question's), so a retried attempt changes nothing twice.
"""

from __future__ import annotations

import sqlite3
import sys

from langgraph.types import RetryPolicy


def postgres_transient() -> tuple[type[Exception], ...]:
    """PostgreSQL's passing troubles (a dropped connection, a deadlock or serialization
    failure), once its driver is loaded: an error of psycopg's can only exist after that,
    so a process on SQLite never imports it for this."""
    if "psycopg" not in sys.modules:
        return ()
    from psycopg import OperationalError
    from psycopg.errors import DeadlockDetected, SerializationFailure

    return (OperationalError, DeadlockDetected, SerializationFailure)


def transient_storage_error(error: Exception) -> bool:
    """A locked or busy SQLite database or PostgreSQL's passing troubles; a vector or
    embedding endpoint that dropped a connection (`VectorStoreUnavailable` is a
    `ConnectionError`)."""
    transient = (sqlite3.OperationalError, ConnectionError, *postgres_transient())
    return isinstance(error, transient)


STORAGE_RETRY = RetryPolicy(
    max_attempts=3,
    initial_interval=0.5,
    backoff_factor=2.0,
    retry_on=transient_storage_error,
)
