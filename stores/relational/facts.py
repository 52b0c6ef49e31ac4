"""Facts about the user, each change kept in `fact_history`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.records import FactRow, FactType, now_iso
from stores.relational.database import Repository
from stores.relational.rows import (
    check_fact,
    ensure_user,
    fact_row,
    mark_pending,
    plain_row,
)


class FactRepository(Repository):
    def add(
        self,
        user_id: int,
        content: str,
        fact_type: FactType,
        importance: int,
        topic_id: int | None = None,
        reason: str | None = None,
    ) -> FactRow:
        check_fact(content, fact_type, importance)
        stamp = now_iso()
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            fact_id = db.execute(
                "INSERT INTO facts (user_id, type, content, importance, topic_id, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (user_id, fact_type, content.strip(), importance, topic_id, stamp, stamp),
            ).fetchone()[0]
            db.execute(
                "INSERT INTO fact_history (fact_id, user_id, action, new_content, new_importance, "
                "reason, topic_id, at) VALUES (?, ?, 'add', ?, ?, ?, ?, ?)",
                (fact_id, user_id, content.strip(), importance, reason, topic_id, stamp),
            )
            mark_pending(db, user_id, "facts", [fact_id])
        return self.get(user_id, fact_id)

    def update(
        self,
        user_id: int,
        fact_id: int,
        content: str | None = None,
        importance: int | None = None,
        fact_type: FactType | None = None,
        reason: str | None = None,
        topic_id: int | None = None,
    ) -> FactRow:
        old = self.get(user_id, fact_id)
        new_content = (content or old["content"]).strip()
        new_importance = old["importance"] if importance is None else importance
        new_type = fact_type or old["type"]
        check_fact(new_content, new_type, new_importance)
        stamp = now_iso()
        with self._db.transaction() as db:
            db.execute(
                "UPDATE facts SET content = ?, importance = ?, type = ?, updated_at = ? "
                "WHERE user_id = ? AND id = ?",
                (new_content, new_importance, new_type, stamp, user_id, fact_id),
            )
            db.execute(
                "INSERT INTO fact_history (fact_id, user_id, action, old_content, new_content, "
                "old_importance, new_importance, reason, topic_id, at) "
                "VALUES (?, ?, 'update', ?, ?, ?, ?, ?, ?, ?)",
                (
                    fact_id,
                    user_id,
                    old["content"],
                    new_content,
                    old["importance"],
                    new_importance,
                    reason,
                    topic_id,
                    stamp,
                ),
            )
            mark_pending(db, user_id, "facts", [fact_id])
        return self.get(user_id, fact_id)

    def delete(
        self, user_id: int, fact_id: int, reason: str | None = None, topic_id: int | None = None
    ) -> FactRow:
        old = self.get(user_id, fact_id)
        with self._db.transaction() as db:
            db.execute("DELETE FROM facts WHERE user_id = ? AND id = ?", (user_id, fact_id))
            mark_pending(db, user_id, "facts", [fact_id])
            db.execute(
                "INSERT INTO fact_history (fact_id, user_id, action, old_content, old_importance, "
                "reason, topic_id, at) VALUES (?, ?, 'delete', ?, ?, ?, ?, ?)",
                (fact_id, user_id, old["content"], old["importance"], reason, topic_id, now_iso()),
            )
        return old

    def get(self, user_id: int, fact_id: int) -> FactRow:
        return fact_row(self._db.one_of_user("facts", "fact", user_id, fact_id))

    def of_topic(self, user_id: int, topic_id: int) -> list[FactRow]:
        """The facts learnt from a topic (their source), most important first."""
        rows = self._db.rows(
            "SELECT * FROM facts WHERE user_id = ? AND topic_id = ? ORDER BY importance DESC, id",
            (user_id, topic_id),
        )
        return [fact_row(row) for row in rows]

    def all_of(self, user_id: int) -> list[FactRow]:
        rows = self._db.rows(
            "SELECT * FROM facts WHERE user_id = ? ORDER BY importance DESC, id", (user_id,)
        )
        return [fact_row(row) for row in rows]

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[FactRow]:
        return [fact_row(row) for row in self._db.by_ids("facts", user_id, ids)]

    def core(self, user_id: int, min_importance: int = 90) -> list[FactRow]:
        """Identity facts and very important ones: they always go into the system prompt."""
        rows = self._db.rows(
            "SELECT * FROM facts WHERE user_id = ? AND (type = 'identity' OR importance >= ?) "
            "ORDER BY importance DESC, id",
            (user_id, min_importance),
        )
        return [fact_row(row) for row in rows]

    def history(self, user_id: int) -> list[dict[str, Any]]:
        rows = self._db.rows("SELECT * FROM fact_history WHERE user_id = ? ORDER BY id", (user_id,))
        return [plain_row(row) for row in rows]
