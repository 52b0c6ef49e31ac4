"""What each answer was made from: its sources (seed 003's `context_used`), one row per
assistant message."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from core.errors import StoreError
from core.records import REPLY_PREFIX, AnsweredBy, AnswerRow, MessageRow, now_iso
from core.text import valid_text
from stores.relational.database import Repository
from stores.relational.rows import mark_pending, message_row


def answer_row(row: sqlite3.Row) -> AnswerRow:
    return AnswerRow(
        message_id=row["message_id"],
        answered_by=row["answered_by"],
        partial=bool(row["partial"]),
        context_used=json.loads(row["context_used"]),
        created_at=row["created_at"],
    )


IN_ORDER = (
    "SELECT a.* FROM answers a JOIN messages m ON m.id = a.message_id "
    "WHERE a.user_id = ? AND m.user_id = ? ORDER BY m.seq"
)
"""The user's answers in conversation order (parameters: the user twice)."""


class AnswerRepository(Repository):
    def record(
        self,
        user_id: int,
        message_id: int,
        context_used: dict[str, Any],
        *,
        answered_by: AnsweredBy,
        partial: bool = False,
    ) -> AnswerRow:
        """Keep what the user's assistant message `message_id` was answered from; recording
        it again (a resumed run) replaces the record."""
        with self._db.transaction() as db:
            owner = db.execute(
                "SELECT role FROM messages WHERE user_id = ? AND id = ?", (user_id, message_id)
            ).fetchone()
            if owner is None or owner["role"] != "assistant":
                raise StoreError(f"message {message_id} is not an answer of user {user_id}")
            db.execute(
                """INSERT INTO answers
                   (message_id, user_id, answered_by, partial, context_used, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (message_id) DO UPDATE SET answered_by = excluded.answered_by,
                   partial = excluded.partial, context_used = excluded.context_used""",
                (
                    message_id,
                    user_id,
                    answered_by,
                    int(partial),
                    json.dumps(context_used, ensure_ascii=False),
                    now_iso(),
                ),
            )
        answer = self.get(user_id, message_id)
        assert answer is not None
        return answer

    def get(self, user_id: int, message_id: int) -> AnswerRow | None:
        rows = self._db.rows(
            "SELECT * FROM answers WHERE user_id = ? AND message_id = ?", (user_id, message_id)
        )
        return answer_row(rows[0]) if rows else None

    def latest(self, user_id: int) -> AnswerRow | None:
        """The user's newest answer (in conversation order)."""
        rows = self._db.rows(f"{IN_ORDER} DESC LIMIT 1", (user_id, user_id))
        return answer_row(rows[0]) if rows else None

    def all_of(self, user_id: int) -> list[AnswerRow]:
        return [answer_row(row) for row in self._db.rows(IN_ORDER, (user_id, user_id))]

    def mark_delivered(self, user_id: int, message_id: int) -> None:
        """The answer `message_id` reached the user (sent to Telegram)."""
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO deliveries (message_id, user_id, delivered_at) "
                "SELECT id, user_id, ? FROM messages WHERE user_id = ? AND id = ? "
                "AND role = 'assistant' ON CONFLICT DO NOTHING",
                (now_iso(), user_id, message_id),
            )

    def cut(self, user_id: int, message_id: int, content: str) -> None:
        """The answer `message_id` was sent cut to `content`: that is its text now, it is
        marked partial, and its vector is queued again."""
        with self._db.transaction() as db:
            cursor = db.execute(
                "UPDATE messages SET content = ? WHERE user_id = ? AND id = ? "
                "AND role = 'assistant'",
                (valid_text(content), user_id, message_id),
            )
            if not cursor.rowcount:
                raise StoreError(f"message {message_id} is not an answer of user {user_id}")
            db.execute(
                "UPDATE answers SET partial = 1 WHERE user_id = ? AND message_id = ?",
                (user_id, message_id),
            )
            mark_pending(db, user_id, "messages", [message_id])

    def undelivered(self, user_id: int, question_external_id: str) -> MessageRow | None:
        """The stored answer to the user's question `question_external_id` if it never
        reached the user (its process died between storing and sending it)."""
        rows = self._db.rows(
            "SELECT a.* FROM messages q JOIN messages a ON a.user_id = q.user_id "
            "AND a.external_id = ? || q.id "
            "WHERE q.user_id = ? AND q.external_id = ? AND a.role = 'assistant' "
            "AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = a.id)",
            (REPLY_PREFIX, user_id, question_external_id),
        )
        return message_row(rows[0]) if rows else None
