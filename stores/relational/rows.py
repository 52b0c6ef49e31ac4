"""Helpers every repository shares: id lists, full-text scoping, row conversion."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from core.errors import StoreError
from core.records import (
    ID_RANGE,
    FactRow,
    MessageRow,
    PersonRow,
    TopicRow,
    now_iso,
    parse_timestamp,
)


def ensure_user(db: sqlite3.Connection, user_id: int) -> None:
    db.execute(
        "INSERT INTO users (user_id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (user_id, now_iso()),
    )


def holds_message(db: sqlite3.Connection, user_id: int, message_id: int) -> bool:
    """Whether `message_id` is one of the user's messages (read inside the caller's
    transaction)."""
    found = db.execute(
        "SELECT 1 FROM messages WHERE user_id = ? AND id = ?", (user_id, message_id)
    ).fetchone()
    return found is not None


def stored_ids(ids: Sequence[int]) -> list[int]:
    """`ids` less those no row can have (outside SQLite's signed 64-bit integers)."""
    return [record_id for record_id in ids if record_id in ID_RANGE]


def placeholders(values: Sequence[Any]) -> str:
    """`?,?,…` for an `IN (…)` list.

    Lookups by id write `+user_id = ? AND id IN (…)`: the unary `+` keeps the planner
    off the user_id indexes, so it always takes the primary key. Without planner
    statistics (a store is never ANALYZEd) SQLite otherwise scans all of the user's
    rows through a user_id index, at a cost that grows with the user's memory.
    """
    return ",".join("?" * len(values))


def mark_pending(db: sqlite3.Connection, user_id: int, kind: str, ids: Sequence[int]) -> None:
    db.executemany(
        "INSERT INTO vector_pending (user_id, kind, record_id) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [(user_id, kind, record_id) for record_id in ids],
    )


def timestamp(value: str) -> float:
    return parse_timestamp(value).timestamp()


def check_fact(content: str, fact_type: str, importance: int) -> None:
    if not content.strip():
        raise StoreError("a fact needs content")
    if fact_type not in ("identity", "context", "status"):
        raise StoreError(f"unknown fact type {fact_type!r}")
    if not 0 <= importance <= 100:
        raise StoreError(f"importance must be within 0..100, got {importance}")


def plain_row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    data.pop("user_id", None)
    return data


def message_row(row: sqlite3.Row) -> MessageRow:
    return MessageRow(**plain_row(row))


def topic_row(row: sqlite3.Row) -> TopicRow:
    data = plain_row(row)
    data["facts_extracted"] = bool(data["facts_extracted"])
    data["consolidation_checked"] = bool(data["consolidation_checked"])
    return TopicRow(**data)


def fact_row(row: sqlite3.Row) -> FactRow:
    return FactRow(**plain_row(row))


def person_row(row: sqlite3.Row) -> PersonRow:
    data = plain_row(row)
    data["aliases"] = json.loads(data["aliases"])
    return PersonRow(**data)
