"""Records whose vector is not (yet) in the vector index: written in the same
transaction as the record and cleared once the index has it (`stores.indexing`)."""

from __future__ import annotations

from collections.abc import Sequence

from stores.relational.database import Repository
from stores.relational.rows import mark_pending


class VectorQueue(Repository):
    def pending(self, user_id: int, kind: str, limit: int = 1000) -> list[int]:
        rows = self._db.rows(
            "SELECT record_id FROM vector_pending WHERE user_id = ? AND kind = ? "
            "ORDER BY record_id LIMIT ?",
            (user_id, kind, limit),
        )
        return [row[0] for row in rows]

    def clear(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        self._db.write_for_ids(
            "DELETE FROM vector_pending WHERE user_id = ? AND kind = ? AND record_id IN",
            (user_id, kind),
            ids,
        )

    def mark(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        with self._db.transaction() as db:
            mark_pending(db, user_id, kind, ids)
