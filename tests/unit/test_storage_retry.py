"""The storage retry policy: which errors are passing troubles worth another attempt."""

from __future__ import annotations

import sqlite3

import psycopg
from psycopg.errors import DeadlockDetected, SerializationFailure, UniqueViolation

from core.errors import VectorStoreUnavailable
from core.retry import STORAGE_RETRY, transient_storage_error


def test_passing_troubles_of_either_engine_are_retried() -> None:
    assert STORAGE_RETRY.retry_on is transient_storage_error
    assert transient_storage_error(sqlite3.OperationalError("database is locked"))
    assert transient_storage_error(VectorStoreUnavailable("vector store unavailable"))
    assert transient_storage_error(psycopg.OperationalError("server closed the connection"))
    assert transient_storage_error(DeadlockDetected("deadlock detected"))
    assert transient_storage_error(SerializationFailure("could not serialize access"))


def test_lasting_errors_are_not_retried() -> None:
    assert not transient_storage_error(sqlite3.IntegrityError("UNIQUE constraint failed"))
    assert not transient_storage_error(UniqueViolation("duplicate key value"))
    assert not transient_storage_error(ValueError("bad input"))
