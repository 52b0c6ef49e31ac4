"""Users, their conversation segments (`/new`), each segment's rolling summary (seed 003)
and the titles of imported conversations."""

from __future__ import annotations

from typing import Literal

from core.errors import StoreError
from core.records import SessionSummaryRow, now_iso
from stores.relational.database import Repository
from stores.relational.rows import ensure_user


class SessionRepository(Repository):
    def current_segment(self, user_id: int) -> int:
        rows = self._db.rows("SELECT current_segment FROM users WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else 0

    def start_new_segment(self, user_id: int) -> int:
        """`/new`: later messages belong to a fresh conversation segment."""
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            db.execute(
                "UPDATE users SET current_segment = current_segment + 1 WHERE user_id = ?",
                (user_id,),
            )
            return db.execute(
                "SELECT current_segment FROM users WHERE user_id = ?", (user_id,)
            ).fetchone()[0]

    def user_ids(self) -> list[int]:
        return [row[0] for row in self._db.rows("SELECT user_id FROM users ORDER BY user_id")]

    def summary(self, user_id: int, segment: int) -> SessionSummaryRow | None:
        """The rolling summary of a segment's older messages, if one was written."""
        rows = self._db.rows(
            "SELECT * FROM session_summaries WHERE user_id = ? AND segment = ?",
            (user_id, segment),
        )
        return SessionSummaryRow(**dict(rows[0])) if rows else None

    def save_summary(
        self,
        user_id: int,
        segment: int,
        first_seq: int,
        last_seq: int,
        summary: str,
        written_by: Literal["llm", "extractive"],
    ) -> SessionSummaryRow:
        """Replace the segment's rolling summary (it covers messages first_seq..last_seq)."""
        if not summary.strip():
            raise StoreError("a session summary needs content")
        row = SessionSummaryRow(
            user_id=user_id,
            segment=segment,
            first_seq=first_seq,
            last_seq=last_seq,
            summary=summary.strip(),
            written_by=written_by,
            updated_at=now_iso(),
        )
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            db.execute(
                "INSERT INTO session_summaries (user_id, segment, first_seq, last_seq, summary, "
                "written_by, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (user_id, segment) DO UPDATE SET first_seq = excluded.first_seq, "
                "last_seq = excluded.last_seq, summary = excluded.summary, "
                "written_by = excluded.written_by, updated_at = excluded.updated_at",
                (
                    user_id,
                    segment,
                    row["first_seq"],
                    row["last_seq"],
                    row["summary"],
                    written_by,
                    row["updated_at"],
                ),
            )
        return row

    def set_titles(self, user_id: int, titles: dict[str, str]) -> None:
        """Keep each conversation's title by its key (its messages' external id prefix,
        `chatgpt:<id>`); a title given again replaces the old one."""
        with self._db.transaction() as db:
            for conversation, title in titles.items():
                db.execute(
                    "INSERT INTO conversation_titles (user_id, conversation, title) "
                    "VALUES (?, ?, ?) ON CONFLICT (user_id, conversation) "
                    "DO UPDATE SET title = excluded.title",
                    (user_id, conversation, title),
                )

    def titles(self, user_id: int) -> dict[str, str]:
        """The user's imported conversations' titles by conversation key."""
        rows = self._db.rows(
            "SELECT conversation, title FROM conversation_titles WHERE user_id = ?", (user_id,)
        )
        return {row[0]: row[1] for row in rows}
