"""Writing a store as it was before a migration, for tests of that migration: the
repositories write today's columns, so rows of an older schema are written here."""

from __future__ import annotations

from core.records import NewMessage, parse_timestamp
from stores.relational import RelationalStore


def add_before_kinds(store: RelationalStore, user_id: int, messages: list[NewMessage]) -> list[int]:
    """Messages written as a store before migration 6 (no `kind` column) wrote them."""
    added = []
    with store.db.transaction() as db:
        db.execute("INSERT OR IGNORE INTO users(user_id, created_at) VALUES (?, '')", (user_id,))
        for message in messages:
            seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE user_id = ?", (user_id,)
            ).fetchone()[0]
            cursor = db.execute(
                "INSERT INTO messages (user_id, seq, external_id, role, author, content, "
                "created_at, ts, segment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    user_id,
                    seq,
                    message["external_id"],
                    message["role"],
                    message.get("author"),
                    message["content"],
                    message["created_at"],
                    parse_timestamp(message["created_at"]).timestamp(),
                ),
            )
            added.append(cursor.lastrowid)
    return added


def save_before_kinds(
    store: RelationalStore, user_id: int, summary: str, members: list[int]
) -> int:
    """A topic of `members`, as a store before migration 6 wrote it."""
    with store.db.transaction() as db:
        cursor = db.execute(
            "INSERT INTO topics (user_id, summary, start_msg_id, end_msg_id, size_chars, "
            "message_count, first_message_at, last_message_at, created_at) "
            "VALUES (?, ?, ?, ?, 1, ?, '', '', '')",
            (user_id, summary, min(members), max(members), len(members)),
        )
        db.execute(
            f"UPDATE messages SET topic_id = ? WHERE id IN ({','.join('?' * len(members))})",
            (cursor.lastrowid, *members),
        )
    return cursor.lastrowid
