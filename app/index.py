"""The vector index against the relational store: noticing that it was built with another
embedder, and rebuilding it (`topica reindex`, seed 004).

Collections are named after the embedder, so after a change of embeddings provider or
model every search reads new, empty collections: recall by vectors is gone for all
existing memory until it is rebuilt. The store records which embedder built the index;
the command line and the bot say so at start when it differs from the configured one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from core.deps import Deps
from core.progress import ProgressBoard

OPTIONAL_KINDS = ("passages",)
"""Kinds of records only some users have (passages: of the documents they sent), rebuilt
like the others but reported only for a user who has some."""


def reported(counts: dict[str, int]) -> dict[str, int]:
    """A user's counts per kind, less the optional kinds the user has none of."""
    return {kind: n for kind, n in counts.items() if n or kind not in OPTIONAL_KINDS}


def embedder_notice(deps: Deps) -> str | None:
    """A sentence for the user when the index was built with another embedder, else None."""
    change = deps.indexer.embedder_change()
    if change is None:
        return None
    built_with, now = change
    return (
        f"the vector index was built with the embedder {built_with!r}, but {now!r} is "
        "configured: vector recall misses existing memory until `topica reindex` rebuilds it"
    )


async def reindex(
    deps: Deps, user_id: int | None = None, progress: ProgressBoard | None = None
) -> dict[str, Any]:
    """Rebuild the vectors of one user (or of every user) from SQLite with the configured
    embedder; with every user done, the index is recorded as built with it."""
    store = deps.store
    users = [user_id] if user_id is not None else await asyncio.to_thread(store.sessions.user_ids)
    task = progress.task("reindexing", total=len(users), unit="users") if progress else None
    counts: dict[int, dict[str, int]] = {}
    for user in users:
        counts[user] = reported(await asyncio.to_thread(deps.indexer.reindex, user))
        if task is not None:
            task.advance()
    if task is not None:
        task.finish()
    if user_id is None:
        await asyncio.to_thread(store.vector_queue.set_embedder, deps.embedder.name)
    return {
        "embedder": deps.embedder.name,
        "users": [{"user_id": user, **kinds} for user, kinds in counts.items()],
        "notice": None if user_id is None else embedder_notice(deps),
    }
