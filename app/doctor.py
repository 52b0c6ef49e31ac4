"""`topica doctor`: does the vector index hold exactly what the relational store holds?

For each user and each kind of record with a vector (messages, topics, facts, people,
document passages)
it compares the ids in SQLite with the ids in the vector index: records without a
vector (`missing`; those still in the vector queue are `pending`, indexed by the next
run anyway) and vectors without a record (`orphans`, a deleted topic still findable).
Repair puts every difference into the vector queue and lets the one indexing path
(`stores.indexing.Indexer`) settle it: missing records are embedded and upserted,
orphans deleted.
"""

from __future__ import annotations

import asyncio
from typing import Any

from core.deps import Deps
from core.ports import VECTOR_KINDS, VectorKind
from core.records import MEMORY_KIND

PAGE = 1_000_000
BATCH = 10_000
"""Message ids per `IN (...)` query (SQLite allows 32,766 parameters)."""


def stored_ids(deps: Deps, user_id: int, kind: VectorKind) -> set[int]:
    """The user's records of `kind` that should have a vector (as `Indexer` decides:
    only conversation messages)."""
    store = deps.store
    rows: list[Any]
    if kind == "messages":
        messages = store.messages.all_of(user_id)
        return {row["id"] for row in messages if row["kind"] == MEMORY_KIND}
    if kind == "passages":
        message_ids = [row["id"] for row in store.messages.all_of(user_id)]
        return {
            row["id"]
            for start in range(0, len(message_ids), BATCH)
            for row in store.attachments.passages_of_messages(
                user_id, message_ids[start : start + BATCH]
            )
        }
    if kind == "topics":
        rows = store.topics.all_of(user_id)
    elif kind == "facts":
        rows = store.facts.all_of(user_id)
    else:
        rows = store.people.all_of(user_id)
    return {row["id"] for row in rows}


def check_kind(deps: Deps, user_id: int, kind: VectorKind) -> dict[str, Any]:
    stored = stored_ids(deps, user_id, kind)
    indexed = deps.vectors.ids(kind, user_id)
    pending = set(deps.store.vector_queue.pending(user_id, kind, PAGE))
    return {
        "user_id": user_id,
        "kind": kind,
        "stored": len(stored),
        "indexed": len(indexed),
        "pending": len(pending),
        "missing": sorted(stored - indexed - pending),
        "orphans": sorted(indexed - stored),
    }


def check_user(deps: Deps, user_id: int, *, repair: bool = False) -> list[dict[str, Any]]:
    """One report per kind; with `repair`, each difference queued and indexed, and the
    report taken again after (`repaired` says how many were set right)."""
    reports = [check_kind(deps, user_id, kind) for kind in VECTOR_KINDS]
    if not repair:
        return reports
    repaired = []
    for report in reports:
        kind = report["kind"]
        wrong = [*report["missing"], *report["orphans"]]
        deps.store.vector_queue.mark(user_id, kind, wrong)
        deps.indexer.index(user_id, kind)
        after = check_kind(deps, user_id, kind)
        repaired.append({**after, "repaired": len(wrong) + report["pending"]})
    return repaired


async def doctor(deps: Deps, user_ids: list[int], *, repair: bool = False) -> dict[str, Any]:
    """Reports of every user asked about, and whether index and store agree now. Each
    user is checked holding their memory-run lock, so a run going on (the bot's worker,
    an ingest) never shows as a difference half-way."""
    reports = []
    for user_id in user_ids:
        async with deps.run_lock.hold(user_id):
            reports += await asyncio.to_thread(check_user, deps, user_id, repair=repair)
    return {
        "reports": reports,
        "consistent": all(not r["missing"] and not r["orphans"] for r in reports),
    }
