"""Keeping the vector index in step with the relational store.

Every stored record that needs a vector is listed in the store's
`vector_pending` table in the same transaction that writes it; `index_records`
embeds, upserts and clears the entry. If the vector store is down, the entries
stay, and `reindex_pending` (run before every memory run) catches up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from graphs.deps import Deps
from nodes.formatting import topic_embedding_text
from stores.records import PersonRow, TopicRow
from stores.vectors import KINDS, Kind


def topic_metadata(topic: TopicRow) -> dict:
    return {
        "start_msg_id": topic["start_msg_id"],
        "end_msg_id": topic["end_msg_id"],
        "last_ts": topic["last_message_at"],
    }


def person_text(person: PersonRow) -> str:
    return f"{person['name']} {' '.join(person['aliases'])}: {person['bio'] or ''}"


def _records(deps: Deps, user_id: int, kind: Kind, ids: Sequence[int]):
    """(ids found, texts to embed, metadata) of the user's records of one kind."""
    store = deps.store
    if kind == "messages":
        rows = store.messages_by_ids(user_id, ids)
        metadata = [{"segment": r["segment"], "role": r["role"], "ts": r["ts"]} for r in rows]
        return [r["id"] for r in rows], [r["content"] for r in rows], metadata
    if kind == "topics":
        topics = store.topics_by_ids(user_id, ids)
        texts = [
            topic_embedding_text(topic["summary"], store.topic_messages(user_id, topic["id"]))
            for topic in topics
        ]
        return [t["id"] for t in topics], texts, [topic_metadata(t) for t in topics]
    if kind == "facts":
        facts = store.facts_by_ids(user_id, ids)
        metadata = [{"type": f["type"], "importance": f["importance"]} for f in facts]
        return [f["id"] for f in facts], [f["content"] for f in facts], metadata
    people = store.people_by_ids(user_id, ids)
    return [p["id"] for p in people], [person_text(p) for p in people], [{} for _ in people]


async def index_records(
    deps: Deps,
    user_id: int,
    kind: Kind,
    ids: Sequence[int],
    vectors: dict[int, Sequence[float]] | None = None,
) -> int:
    """Embed (unless vectors are given) and upsert records, then clear their pending entries.

    Ids that no longer exist (deleted, merged away) are removed from the index.
    Returns how many records were indexed.
    """
    if not ids:
        return 0
    found, texts, metadata = await asyncio.to_thread(_records, deps, user_id, kind, ids)
    if found:
        if vectors is not None and all(record_id in vectors for record_id in found):
            matrix = np.asarray([vectors[record_id] for record_id in found], dtype=np.float32)
        else:
            matrix = await asyncio.to_thread(deps.embedder.encode, texts)
        await asyncio.to_thread(deps.vectors.upsert, kind, user_id, found, matrix, metadata)
    missing = [record_id for record_id in ids if record_id not in set(found)]
    await asyncio.to_thread(deps.vectors.delete, kind, user_id, missing)
    await asyncio.to_thread(deps.store.clear_pending_vectors, user_id, kind, list(ids))
    return len(found)


async def reindex_pending(deps: Deps, user_id: int, batch: int = 256) -> dict[str, int]:
    """Index everything of this user still waiting for a vector; returns counts per kind."""
    counts: dict[str, int] = {}
    for kind in KINDS:
        total = 0
        while pending := await asyncio.to_thread(deps.store.pending_vectors, user_id, kind, batch):
            total += await index_records(deps, user_id, kind, pending)
        if total:
            counts[kind] = total
    return counts
