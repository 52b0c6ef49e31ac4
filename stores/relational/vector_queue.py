"""Records whose vector is not (yet) in the vector index: written in the same
transaction as the record and cleared once the index has it (`stores.indexing`); and the
name of the embedder the index was built with."""

from __future__ import annotations

from collections.abc import Sequence

from core.records import MEMORY_KIND
from stores.relational.database import Repository
from stores.relational.rows import mark_pending, placeholders, stored_ids


class VectorQueue(Repository):
    def pending(self, user_id: int, kind: str, limit: int = 1000) -> list[int]:
        rows = self._db.rows(
            "SELECT record_id FROM vector_pending WHERE user_id = ? AND kind = ? "
            "ORDER BY record_id LIMIT ?",
            (user_id, kind, limit),
        )
        return [row[0] for row in rows]

    def pending_among(self, user_id: int, kind: str, ids: Sequence[int]) -> set[int]:
        """Those of `ids` that wait in the user's queue of `kind` (their vector is missing
        from the index, or older than the record)."""
        ids = stored_ids(ids)
        if not ids:
            return set()
        rows = self._db.rows(
            "SELECT record_id FROM vector_pending WHERE user_id = ? AND kind = ? "
            f"AND record_id IN ({placeholders(ids)})",
            (user_id, kind, *ids),
        )
        return {row[0] for row in rows}

    def clear(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        self._db.write_for_ids(
            "DELETE FROM vector_pending WHERE user_id = ? AND kind = ? AND record_id IN",
            (user_id, kind),
            ids,
        )

    def mark(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        with self._db.transaction() as db:
            mark_pending(db, user_id, kind, ids)

    def mark_all(self, user_id: int, kind: str) -> int:
        """Queue every record of the user that has a vector (of messages, the conversation
        alone; of documents, their passages); how many."""
        table, only = {
            "messages": ("messages", f" AND kind = '{MEMORY_KIND}'"),
            "topics": ("topics", ""),
            "facts": ("facts", ""),
            "people": ("people", ""),
            "passages": ("passages", ""),
        }[kind]
        with self._db.transaction() as db:
            ids = [
                row[0]
                for row in db.execute(f"SELECT id FROM {table} WHERE user_id = ?{only}", (user_id,))
            ]
            mark_pending(db, user_id, kind, ids)
        return len(ids)

    def embedder(self) -> str | None:
        """The embedder the vector index was built with; None before anything was indexed."""
        rows = self._db.rows("SELECT value FROM vector_index WHERE key = 'embedder'")
        return rows[0][0] if rows else None

    def set_embedder(self, name: str) -> None:
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO vector_index (key, value) VALUES ('embedder', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name,),
            )
