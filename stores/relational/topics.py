"""Archived topics: a summary and the messages whose `topic_id` points at it."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import StoreError
from core.records import MEMORY_KIND, TopicRow, now_iso
from stores.relational.database import Repository
from stores.relational.rows import mark_pending, placeholders, timestamp, topic_row

NOT_STALE = (
    "AND NOT EXISTS (SELECT 1 FROM stale_topics s WHERE s.user_id = r.user_id "
    "AND s.topic_id = r.id)"
)


class TopicRepository(Repository):
    def save(self, user_id: int, drafts: Sequence[tuple[str, Sequence[int]]]) -> list[TopicRow]:
        """Create topics from (summary, member message ids) and point messages at them.

        One transaction for the whole chunk. Idempotent: members that already
        belong to a topic are left where they are, and a draft whose members
        are all archived yields the topic they belong to instead of a new one.
        """
        saved: list[int] = []
        with self._db.transaction() as db:
            for summary, member_ids in drafts:
                if not summary.strip():
                    raise StoreError("a topic needs a non-empty summary")
                rows = db.execute(
                    f"SELECT id, content, created_at, ts, topic_id, kind FROM messages "
                    f"WHERE +user_id = ? AND id IN ({placeholders(member_ids)}) ORDER BY seq",
                    (user_id, *member_ids),
                ).fetchall()
                if len(rows) != len(set(member_ids)):
                    raise StoreError(f"topic members are not all messages of user {user_id}")
                if any(row["kind"] != MEMORY_KIND for row in rows):
                    raise StoreError("only conversation becomes a topic, not other kinds")
                free = [row for row in rows if row["topic_id"] is None]
                if not free:
                    saved.extend(dict.fromkeys(row["topic_id"] for row in rows))
                    continue
                cursor = db.execute(
                    """INSERT INTO topics (user_id, summary, start_msg_id, end_msg_id, size_chars,
                       message_count, first_message_at, last_message_at, created_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                    (
                        user_id,
                        summary.strip(),
                        min(row["id"] for row in free),
                        max(row["id"] for row in free),
                        sum(len(row["content"]) for row in free),
                        len(free),
                        min(free, key=lambda row: row["ts"])["created_at"],
                        max(free, key=lambda row: row["ts"])["created_at"],
                        now_iso(),
                    ),
                )
                topic_id = cursor.fetchone()[0]
                free_ids = [row["id"] for row in free]
                db.execute(
                    f"UPDATE messages SET topic_id = ? WHERE +user_id = ? "
                    f"AND id IN ({placeholders(free_ids)})",
                    (topic_id, user_id, *free_ids),
                )
                saved.append(topic_id)
            mark_pending(db, user_id, "topics", saved)
        return self.by_ids(user_id, list(dict.fromkeys(saved)))

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[TopicRow]:
        """The user's topics among `ids`, in the order of `ids`; others' ids are ignored."""
        return [topic_row(row) for row in self._db.by_ids("topics", user_id, ids)]

    def owned(self, user_id: int, ids: Sequence[int]) -> set[int]:
        """Those of `ids` that are the user's topics."""
        return self._db.owned_ids("topics", user_id, ids)

    def get(self, user_id: int, topic_id: int) -> TopicRow:
        return topic_row(self._db.one_of_user("topics", "topic", user_id, topic_id))

    def count(self, user_id: int, up_to: int) -> int:
        """How many topics the user has, counted up to `up_to` (bounded work)."""
        return self._db.rows(
            "SELECT COUNT(*) FROM (SELECT 1 FROM topics WHERE user_id = ? LIMIT ?) AS capped",
            (user_id, up_to),
        )[0][0]

    def all_of(self, user_id: int) -> list[TopicRow]:
        rows = self._db.rows(
            "SELECT * FROM topics WHERE user_id = ? ORDER BY start_msg_id, id", (user_id,)
        )
        return [topic_row(row) for row in rows]

    def to_consolidate(self, user_id: int, limit: int) -> list[TopicRow]:
        rows = self._db.rows(
            "SELECT * FROM topics WHERE user_id = ? AND consolidation_checked = 0 "
            "ORDER BY id LIMIT ?",
            (user_id, limit),
        )
        return [topic_row(row) for row in rows]

    def _set_flag(self, flag: str, user_id: int, topic_ids: Sequence[int]) -> None:
        self._db.write_for_ids(
            f"UPDATE topics SET {flag} = 1 WHERE +user_id = ? AND id IN", (user_id,), topic_ids
        )

    def mark_consolidation_checked(self, user_id: int, topic_ids: Sequence[int]) -> None:
        self._set_flag("consolidation_checked", user_id, topic_ids)

    def merge(self, user_id: int, source_id: int, target_id: int, merged_summary: str) -> TopicRow:
        """Fold `source` into `target`: bounds widened, sizes summed, members re-pointed.

        The source is deleted; the target is marked consolidation-checked.
        Membership moves by `topic_id`, so messages of other topics lying
        inside the widened range are untouched.
        """
        if source_id == target_id:
            raise StoreError("a topic cannot be merged into itself")
        if not merged_summary.strip():
            raise StoreError("a merged topic needs a non-empty summary")
        with self._db.transaction() as db:
            rows = db.execute(
                "SELECT * FROM topics WHERE +user_id = ? AND id IN (?, ?)",
                (user_id, source_id, target_id),
            ).fetchall()
            if len(rows) != 2:
                raise StoreError(f"topics {source_id}, {target_id} not both of user {user_id}")
            source, target = sorted(rows, key=lambda row: row["id"] != source_id)
            db.execute(
                "UPDATE messages SET topic_id = ? WHERE user_id = ? AND topic_id = ?",
                (target_id, user_id, source_id),
            )
            firsts = sorted([source["first_message_at"], target["first_message_at"]], key=timestamp)
            lasts = sorted([source["last_message_at"], target["last_message_at"]], key=timestamp)
            db.execute(
                """UPDATE topics SET summary = ?, start_msg_id = ?, end_msg_id = ?,
                   size_chars = ?, message_count = ?, first_message_at = ?, last_message_at = ?,
                   consolidation_checked = 1,
                   facts_extracted = ?
                   WHERE user_id = ? AND id = ?""",
                (
                    merged_summary.strip(),
                    min(source["start_msg_id"], target["start_msg_id"]),
                    max(source["end_msg_id"], target["end_msg_id"]),
                    source["size_chars"] + target["size_chars"],
                    source["message_count"] + target["message_count"],
                    firsts[0],
                    lasts[-1],
                    int(bool(source["facts_extracted"]) and bool(target["facts_extracted"])),
                    user_id,
                    target_id,
                ),
            )
            db.execute("DELETE FROM topics WHERE user_id = ? AND id = ?", (user_id, source_id))
            mark_pending(db, user_id, "topics", [target_id, source_id])
        return self.get(user_id, target_id)

    def without_facts(self, user_id: int, limit: int) -> list[TopicRow]:
        rows = self._db.rows(
            "SELECT * FROM topics WHERE user_id = ? AND facts_extracted = 0 ORDER BY id LIMIT ?",
            (user_id, limit),
        )
        return [topic_row(row) for row in rows]

    def users_without_facts(self) -> list[int]:
        rows = self._db.rows(
            "SELECT DISTINCT user_id FROM topics WHERE facts_extracted = 0 ORDER BY user_id"
        )
        return [row[0] for row in rows]

    def mark_facts_extracted(self, user_id: int, topic_ids: Sequence[int]) -> None:
        self._set_flag("facts_extracted", user_id, topic_ids)

    def delete(self, user_id: int, topic_id: int) -> None:
        """Forget a topic and its messages (the user asked for it)."""
        with self._db.transaction() as db:
            found = db.execute(
                "SELECT 1 FROM topics WHERE user_id = ? AND id = ?", (user_id, topic_id)
            ).fetchone()
            if not found:
                raise StoreError(f"topic {topic_id} not found for user {user_id}")
            message_ids = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM messages WHERE user_id = ? AND topic_id = ?",
                    (user_id, topic_id),
                )
            ]
            passage_ids = [
                row[0]
                for row in db.execute(
                    f"SELECT id FROM passages WHERE user_id = ? "
                    f"AND message_id IN ({placeholders(message_ids)})",
                    (user_id, *message_ids),
                )
            ]
            db.execute(
                "DELETE FROM messages WHERE user_id = ? AND topic_id = ?", (user_id, topic_id)
            )
            mark_pending(db, user_id, "passages", passage_ids)
            db.execute("DELETE FROM topics WHERE user_id = ? AND id = ?", (user_id, topic_id))
            # The vector index forgets them too: the indexer deletes queued ids it cannot find.
            mark_pending(db, user_id, "topics", [topic_id])
            mark_pending(db, user_id, "messages", message_ids)

    def stale(self, user_id: int) -> list[TopicRow]:
        """Topics whose messages changed (an edit, a transcript) since they were summarised."""
        rows = self._db.rows(
            "SELECT t.* FROM topics t JOIN stale_topics s ON s.topic_id = t.id "
            "WHERE s.user_id = ? AND t.user_id = ? ORDER BY t.id",
            (user_id, user_id),
        )
        return [topic_row(row) for row in rows]

    def users_with_stale(self) -> list[int]:
        return [row[0] for row in self._db.rows("SELECT DISTINCT user_id FROM stale_topics")]

    def resummarise(self, user_id: int, topic_id: int, summary: str) -> TopicRow:
        """A stale topic summarised again: the new summary and size, the mark cleared, the
        topic's vector queued (its text is the summary and its messages)."""
        if not summary.strip():
            raise StoreError("a topic needs a non-empty summary")
        with self._db.transaction() as db:
            size = db.execute(
                "SELECT COALESCE(SUM(length(content)), 0) FROM messages "
                "WHERE user_id = ? AND topic_id = ?",
                (user_id, topic_id),
            ).fetchone()[0]
            cursor = db.execute(
                "UPDATE topics SET summary = ?, size_chars = ? WHERE user_id = ? AND id = ?",
                (summary.strip(), size, user_id, topic_id),
            )
            if not cursor.rowcount:
                raise StoreError(f"topic {topic_id} not found for user {user_id}")
            db.execute(
                "DELETE FROM stale_topics WHERE user_id = ? AND topic_id = ?", (user_id, topic_id)
            )
            mark_pending(db, user_id, "topics", [topic_id])
        return self.get(user_id, topic_id)

    def search(self, user_id: int, text: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over the user's topic summaries: (topic id, score), best first. A stale
        topic (a message of it edited since its summary was written) is left out until it
        is summarised again, so its old words find nothing."""
        return self._db.fulltext("topics", user_id, text, limit, NOT_STALE)
