"""Every message a user sent or received, in per-user order, with the topic it was archived into."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.records import MessageRow, NewMessage, parse_timestamp
from stores.fulltext import fts_match_expression
from stores.relational.database import Repository
from stores.relational.rows import ensure_user, mark_pending, message_row, placeholders, users_rows


class MessageRepository(Repository):
    def add(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages in order, all or nothing; ones already stored are skipped.

        Returns the newly stored rows. A message is "already stored" when the
        user has one with the same external id, so re-ingesting is harmless.
        """
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            segment = db.execute(
                "SELECT current_segment FROM users WHERE user_id = ?", (user_id,)
            ).fetchone()[0]
            next_seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE user_id = ?", (user_id,)
            ).fetchone()[0]
            new_ids: list[int] = []
            for message in messages:
                cursor = db.execute(
                    """INSERT INTO messages
                       (user_id, seq, external_id, role, author, content, created_at, ts, segment)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT (user_id, external_id) DO NOTHING""",
                    (
                        user_id,
                        next_seq,
                        message["external_id"],
                        message["role"],
                        message.get("author"),
                        message["content"],
                        message["created_at"],
                        parse_timestamp(message["created_at"]).timestamp(),
                        segment,
                    ),
                )
                if cursor.rowcount:
                    new_ids.append(cursor.lastrowid)
                    next_seq += 1
            mark_pending(db, user_id, "messages", new_ids)
        return self.by_ids(user_id, new_ids)

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[MessageRow]:
        if not ids:
            return []
        rows = self._db.rows(
            f"SELECT * FROM messages WHERE +user_id = ? AND id IN ({placeholders(ids)}) "
            "ORDER BY seq",
            (user_id, *ids),
        )
        return [message_row(row) for row in rows]

    def by_external_id(self, user_id: int, external_id: str) -> MessageRow | None:
        """The user's message stored under `external_id` (its file or Telegram id), if any."""
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND external_id = ?", (user_id, external_id)
        )
        return message_row(rows[0]) if rows else None

    def unarchived(self, user_id: int, limit: int | None = None) -> list[MessageRow]:
        sql = "SELECT * FROM messages WHERE user_id = ? AND topic_id IS NULL ORDER BY seq"
        params: list[Any] = [user_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [message_row(row) for row in self._db.rows(sql, params)]

    def users_with_unarchived(self) -> list[tuple[int, int, float]]:
        """(user id, unarchived count, time of the newest unarchived message) per user."""
        rows = self._db.rows(
            "SELECT user_id, COUNT(*), MAX(ts) FROM messages WHERE topic_id IS NULL "
            "GROUP BY user_id ORDER BY user_id"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def of_topic(self, user_id: int, topic_id: int) -> list[MessageRow]:
        """A topic's messages: those whose `topic_id` points at it, never its range."""
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND topic_id = ? ORDER BY seq",
            (user_id, topic_id),
        )
        return [message_row(row) for row in rows]

    def external_ids_by_topic(self, user_id: int, topic_ids: Sequence[int]) -> dict[int, list[str]]:
        """External ids of each topic's member messages, in order."""
        result: dict[int, list[str]] = {topic_id: [] for topic_id in topic_ids}
        if not topic_ids:
            return result
        rows = self._db.rows(
            f"SELECT topic_id, external_id FROM messages WHERE user_id = ? "
            f"AND topic_id IN ({placeholders(topic_ids)}) ORDER BY seq",
            (user_id, *topic_ids),
        )
        for row in rows:
            result[row[0]].append(row[1])
        return result

    def recent(self, user_id: int, limit: int, segment: int | None = None) -> list[MessageRow]:
        """The newest `limit` messages (optionally of one segment), oldest first."""
        sql = "SELECT * FROM messages WHERE user_id = ?"
        params: list[Any] = [user_id]
        if segment is not None:
            sql += " AND segment = ?"
            params.append(segment)
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        return [message_row(row) for row in reversed(self._db.rows(sql, params))]

    def of_segment(self, user_id: int, segment: int) -> list[MessageRow]:
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND segment = ? ORDER BY seq",
            (user_id, segment),
        )
        return [message_row(row) for row in rows]

    def count(self, user_id: int) -> int:
        return self._db.rows("SELECT COUNT(*) FROM messages WHERE user_id = ?", (user_id,))[0][0]

    def all_of(self, user_id: int) -> list[MessageRow]:
        rows = self._db.rows("SELECT * FROM messages WHERE user_id = ? ORDER BY seq", (user_id,))
        return [message_row(row) for row in rows]

    def search(
        self, user_id: int, text: str, limit: int, segment: int | None = None
    ) -> list[tuple[int, float]]:
        """BM25 full-text search over the user's messages: (message id, score), best first.

        The score is FTS5's bm25 negated, so larger is better.
        """
        expression = fts_match_expression(text)
        if expression is None:
            return []
        sql = (
            "SELECT m.id, -bm25(messages_fts, 1.0, 0.0) AS score FROM messages_fts "
            "JOIN messages m ON m.id = messages_fts.rowid "
            "WHERE messages_fts MATCH ? AND m.user_id = ?"
        )
        params: list[Any] = [users_rows(user_id, "content", expression), user_id]
        if segment is not None:
            sql += " AND m.segment = ?"
            params.append(segment)
        sql += " ORDER BY score DESC LIMIT ?"
        params.append(limit)
        return [(row[0], row[1]) for row in self._db.rows(sql, params)]
