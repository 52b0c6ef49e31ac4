"""The bundled example session (graphs/examples) and its true subject blocks."""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.memory import archive_user
from core.deps import Deps
from core.state import MemoryState
from stores.saved_sessions import read_session
from tests.support.paths import DEMO_SESSION, DEMO_SUBJECTS


def demo_subject_of() -> dict[str, int]:
    """External id of each demo message → index of its true subject block."""
    blocks = json.loads(DEMO_SUBJECTS.read_text(encoding="utf-8"))
    order = [message["external_id"] for message in read_session(DEMO_SESSION)]
    position = {external_id: index for index, external_id in enumerate(order)}
    subject: dict[str, int] = {}
    for block_index, block in enumerate(blocks):
        for index in range(position[block["first"]], position[block["last"]] + 1):
            subject[order[index]] = block_index
    return subject


@dataclass
class DemoArchive:
    """The example session ingested (non-LLM path) for two users, each twice."""

    deps: Deps
    users: tuple[int, ...]
    external_ids: list[str]
    stored_first: dict[int, int]
    stored_second: dict[int, int]
    chunks_first: dict[int, list[MemoryState]]
    chunks_second: dict[int, list[MemoryState]]
    topic_ids_first: dict[int, list[int]]
    subject_of: dict[str, int]


async def archive_demo_twice(deps: Deps, users: tuple[int, ...] = (1, 2)) -> DemoArchive:
    """Ingest the example session for each of `users`, then all of it once more."""
    messages = read_session(DEMO_SESSION)
    stored_first, stored_second, chunks_first, chunks_second, topic_ids_first = {}, {}, {}, {}, {}
    for user_id in users:
        stored_first[user_id] = len(deps.indexer.store_messages(user_id, messages))
        chunks_first[user_id] = await archive_user(deps, user_id, archive_all=True)
        topic_ids_first[user_id] = [topic["id"] for topic in deps.store.topics.all_of(user_id)]
    for user_id in users:
        stored_second[user_id] = len(deps.indexer.store_messages(user_id, messages))
        chunks_second[user_id] = await archive_user(deps, user_id, archive_all=True)
    return DemoArchive(
        deps=deps,
        users=users,
        external_ids=[message["external_id"] for message in messages],
        stored_first=stored_first,
        stored_second=stored_second,
        chunks_first=chunks_first,
        chunks_second=chunks_second,
        topic_ids_first=topic_ids_first,
        subject_of=demo_subject_of(),
    )
