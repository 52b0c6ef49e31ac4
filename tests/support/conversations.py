"""Conversations several test modules tell: a sick cat and a Postgres upgrade."""

from __future__ import annotations

from datetime import datetime
from itertools import groupby
from typing import Any

from app.memory import archive_user
from core.deps import Deps
from core.records import NewMessage
from core.state import MemoryState
from tests.support.messages import new_messages

CAT_TALK = [
    "Our cat Marzipan has chronic kidney disease, the vet put him on a renal diet.",
    "A renal diet helps; switch gradually over a week, mixing it with the old food.",
    "He refuses the renal food completely and only eats the old one.",
    "Try warming the wet renal food a little and offering small portions more often.",
    "Should I also give him more water? The vet mentioned subcutaneous fluids.",
    "Yes: a water fountain and wet food help, fluids only as the vet prescribes.",
]
POSTGRES_TALK = [
    "We're upgrading Postgres from 14 to 16 in docker compose; the db container won't start.",
    "PostgreSQL 16 cannot read a data directory initialised by 14: dump and restore it.",
    "On staging the dump and restore took 14 minutes.",
    "Then a 30 minute maintenance window is plenty.",
]
FIRST_DAY = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
THIRD_DAY = datetime.fromisoformat("2026-03-04T18:30:00+00:00")


def told_twice() -> list[NewMessage]:
    """The cat conversation told on one day (`a1…`) and again two days later (`b1…`): two
    sittings, two topics similar enough to merge (archived a day at a time, two chunks:
    `archive_day_by_day`)."""
    return new_messages(CAT_TALK, prefix="a", start=FIRST_DAY) + new_messages(
        CAT_TALK, prefix="b", start=THIRD_DAY
    )


CAT_QUESTION = "What did the vet say about Marzipan's kidneys and the renal diet?"


async def archive_day_by_day(
    deps: Deps, user_id: int, messages: list[NewMessage], **options: Any
) -> list[MemoryState]:
    """Store and archive `messages` one day at a time, as the running bot does: a sitting is
    archived an hour after it ends, long before the next day's is told (one `archive_user`
    over days of stored messages reads them all in one chunk)."""
    results: list[MemoryState] = []
    for _, day in groupby(messages, key=lambda message: message["created_at"][:10]):
        deps.indexer.store_messages(user_id, list(day))
        results += await archive_user(deps, user_id, archive_all=True, **options)
    return results
