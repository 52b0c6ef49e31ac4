"""Conversations several test modules tell: a sick cat and a Postgres upgrade."""

from __future__ import annotations

from datetime import datetime

from core.records import NewMessage
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
    chunks, two topics similar enough to merge."""
    return new_messages(CAT_TALK, prefix="a", start=FIRST_DAY) + new_messages(
        CAT_TALK, prefix="b", start=THIRD_DAY
    )


CAT_QUESTION = "What did the vet say about Marzipan's kidneys and the renal diet?"
