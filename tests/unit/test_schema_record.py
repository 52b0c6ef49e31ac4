"""The migrations make the recorded schema (tests/data/schema/<engine>.txt), to the
letter: how they are written may change, what they make may not. A new migration writes
the record again (`python -m tests.support.schema_dump`)."""

from __future__ import annotations

from stores.relational import RelationalStore
from tests.support.schema_dump import RECORDED, schema_text


def test_a_new_store_has_the_recorded_schema(relational_store: RelationalStore) -> None:
    engine = "sqlite" if relational_store.db.engine == "sqlite" else "postgres"
    recorded = (RECORDED / f"{engine}.txt").read_text(encoding="utf-8")

    assert schema_text(relational_store).splitlines() == recorded.splitlines()
