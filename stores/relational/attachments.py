"""Documents kept as memory: each attachment's text with its message, split into passages
that full-text search and the vector index find like messages."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import StoreError
from core.records import MEMORY_KIND, AttachmentRow, PassageRow, now_iso
from core.text import valid_text
from stores.relational.database import Repository
from stores.relational.rows import holds_message, mark_pending, plain_row

PASSAGE_COLUMNS = (
    "p.id, p.attachment_id, p.message_id, p.position, p.content, a.name "
    "FROM passages p JOIN attachments a ON a.id = p.attachment_id"
)


class AttachmentRepository(Repository):
    def add(
        self,
        user_id: int,
        message_id: int,
        name: str,
        mime_type: str,
        content: str,
        passages: Sequence[str],
    ) -> AttachmentRow:
        """Keep a document with the user's message `message_id`, its passages queued for
        the vector index in the same transaction."""
        with self._db.transaction() as db:
            if not holds_message(db, user_id, message_id):
                raise StoreError(f"message {message_id} not found for user {user_id}")
            cursor = db.execute(
                "INSERT INTO attachments (user_id, message_id, name, mime_type, content, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (user_id, message_id, valid_text(name), mime_type, valid_text(content), now_iso()),
            )
            attachment_id = cursor.fetchone()[0]
            passage_ids = []
            for position, passage in enumerate(p for p in passages if p.strip()):
                cursor = db.execute(
                    "INSERT INTO passages (user_id, attachment_id, message_id, position, content) "
                    "VALUES (?, ?, ?, ?, ?) RETURNING id",
                    (user_id, attachment_id, message_id, position, valid_text(passage.strip())),
                )
                passage_ids.append(cursor.fetchone()[0])
            mark_pending(db, user_id, "passages", passage_ids)
        return self.of_messages(user_id, [message_id])[-1]

    def of_messages(self, user_id: int, message_ids: Sequence[int]) -> list[AttachmentRow]:
        rows = self._db.rows_in(
            "SELECT * FROM attachments WHERE user_id = ? AND message_id IN",
            user_id,
            message_ids,
            "ORDER BY id",
        )
        return [AttachmentRow(**plain_row(row)) for row in rows]

    def all_of(self, user_id: int) -> list[AttachmentRow]:
        rows = self._db.rows("SELECT * FROM attachments WHERE user_id = ? ORDER BY id", (user_id,))
        return [AttachmentRow(**plain_row(row)) for row in rows]

    def passages_by_ids(self, user_id: int, ids: Sequence[int]) -> list[PassageRow]:
        return self._passages_where("p.id", user_id, ids)

    def passages_of_messages(self, user_id: int, message_ids: Sequence[int]) -> list[PassageRow]:
        return self._passages_where("p.message_id", user_id, message_ids)

    def _passages_where(self, column: str, user_id: int, ids: Sequence[int]) -> list[PassageRow]:
        """The user's passages whose `column` is one of `ids`, by id."""
        query = f"SELECT {PASSAGE_COLUMNS} WHERE p.user_id = ? AND {column} IN"
        rows = self._db.rows_in(query, user_id, ids, "ORDER BY p.id")
        return [PassageRow(**dict(row)) for row in rows]

    def passage_ids_of_messages(self, user_id: int, message_ids: Sequence[int]) -> list[int]:
        return [row["id"] for row in self.passages_of_messages(user_id, message_ids)]

    def archived_holding(self, user_id: int, words: Sequence[str]) -> list[bool]:
        """For each of `words`, whether a passage of a document that one of the user's
        archived conversation messages carried holds it."""
        where = (
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id "
            f"AND m.user_id = r.user_id AND m.kind = '{MEMORY_KIND}' AND m.topic_id IS NOT NULL)"
        )
        return self._db.matching_each("passages", user_id, words, where)

    def search(self, user_id: int, text: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over the user's passages: (passage id, score), best first."""
        return self._db.fulltext("passages", user_id, text, limit)
