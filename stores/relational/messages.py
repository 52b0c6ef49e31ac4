"""Every message a user sent or received, in per-user order, with the topic it was archived
into and its kind: only `conversation` messages are archived and searched (core.records)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from core.errors import StoreError
from core.records import (
    MEMORY_KIND,
    MESSAGE_KINDS,
    REPLY_PREFIX,
    Member,
    MessageEditRow,
    MessageRow,
    NewMessage,
    now_iso,
    parse_timestamp,
)
from core.text import valid_text, valid_value
from stores.relational.database import Repository
from stores.relational.rows import (
    ensure_user,
    mark_pending,
    message_row,
    placeholders,
    plain_row,
    stored_ids,
)

IDS_PER_READ = 10_000


class MessageRepository(Repository):
    def add(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages in order, all or nothing; ones already stored are skipped.

        Returns the newly stored rows. A message is "already stored" when the
        user has one with the same external id, so re-ingesting is harmless.
        """
        with self._db.transaction() as db:
            ensure_user(db, user_id)
            self._db.lock_user(db, user_id)  # replicas: one numbers the user's messages at a time
            segment = db.execute(
                "SELECT current_segment FROM users WHERE user_id = ?", (user_id,)
            ).fetchone()[0]
            next_seq = db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE user_id = ?", (user_id,)
            ).fetchone()[0]
            new_ids: list[int] = []
            indexed: list[int] = []  # only conversation gets a message vector
            for message in messages:
                kind = message.get("kind", MEMORY_KIND)
                if kind not in MESSAGE_KINDS:
                    raise StoreError(f"unknown message kind {kind!r}")
                cursor = db.execute(
                    """INSERT INTO messages
                       (user_id, seq, external_id, role, author, content, created_at, ts, segment,
                        kind)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT (user_id, external_id) DO NOTHING RETURNING id""",
                    (
                        user_id,
                        next_seq,
                        message["external_id"],
                        message["role"],
                        valid_value(message.get("author")),
                        valid_value(message["content"]),
                        message["created_at"],
                        parse_timestamp(message["created_at"]).timestamp(),
                        segment,
                        kind,
                    ),
                )
                inserted = cursor.fetchone()
                if inserted is not None:
                    new_ids.append(inserted[0])
                    next_seq += 1
                    if kind == MEMORY_KIND:
                        indexed.append(inserted[0])
            mark_pending(db, user_id, "messages", indexed)
        return self.by_ids(user_id, new_ids)

    def rewrite(
        self, user_id: int, message_id: int, content: str, *, edit: bool
    ) -> MessageRow | None:
        """Change a stored message's text: an edit by its author (`edit`: the change is
        kept in `message_edits`) or what its media turned out to say (a transcript).

        The full-text entry follows (a trigger), the vector is queued again, and the
        message's topic, if archived, is marked for summarising again. None when the user
        has no such message; the row unchanged when the text is the same.
        """
        content = valid_text(content)
        with self._db.transaction() as db:
            row = db.execute(
                "SELECT content, topic_id FROM messages WHERE user_id = ? AND id = ?",
                (user_id, message_id),
            ).fetchone()
            if row is None:
                return None
            if row["content"] != content:
                db.execute(
                    "UPDATE messages SET content = ? WHERE user_id = ? AND id = ?",
                    (content, user_id, message_id),
                )
                if edit:
                    db.execute(
                        "INSERT INTO message_edits (user_id, message_id, old_content, "
                        "new_content, at) VALUES (?, ?, ?, ?, ?)",
                        (user_id, message_id, row["content"], content, now_iso()),
                    )
                mark_pending(db, user_id, "messages", [message_id])
                if row["topic_id"] is not None:
                    db.execute(
                        "INSERT INTO stale_topics (user_id, topic_id) VALUES (?, ?) "
                        "ON CONFLICT DO NOTHING",
                        (user_id, row["topic_id"]),
                    )
        return self.by_ids(user_id, [message_id])[0]

    def edits(self, user_id: int, message_id: int | None = None) -> list[MessageEditRow]:
        """The message's edits (every message's, without one), oldest first."""
        sql, params = "SELECT * FROM message_edits WHERE user_id = ?", [user_id]
        if message_id is not None:
            sql += " AND message_id = ?"
            params.append(message_id)
        rows = self._db.rows(sql + " ORDER BY id", params)
        return [MessageEditRow(**plain_row(row)) for row in rows]

    def by_ids(self, user_id: int, ids: Sequence[int]) -> list[MessageRow]:
        """The user's messages among `ids`, in conversation order. Read `IDS_PER_READ` at
        a time: an import stores a hundred thousand at once, more than one statement may
        bind (SQLite builds allow 32,766 values or more, PostgreSQL 65,535)."""
        ids = stored_ids(ids)
        rows = []
        for start in range(0, len(ids), IDS_PER_READ):
            rows += self._db.rows_in(
                "SELECT * FROM messages WHERE +user_id = ? AND id IN",
                user_id,
                ids[start : start + IDS_PER_READ],
            )
        return sorted((message_row(row) for row in rows), key=lambda row: row["seq"])

    def contents(self, user_id: int, ids: Sequence[int], longer_than: int = -1) -> dict[int, str]:
        """{id: content} of the user's messages among `ids` whose content is longer than
        `longer_than` characters (every one by default): the text alone."""
        return self._column_of(user_id, ids, "content", f"AND length(content) > {int(longer_than)}")

    def by_external_id(self, user_id: int, external_id: str) -> MessageRow | None:
        """The user's message stored under `external_id` (its file or Telegram id), if any."""
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND external_id = ?", (user_id, external_id)
        )
        return message_row(rows[0]) if rows else None

    def remove_task_message(self, user_id: int, external_id: str) -> bool:
        """Delete the user's scheduled-task message stored under `external_id` (with its
        sources), one the user never received; whether there was one. Only a `task`
        message: conversation is never removed this way."""
        with self._db.transaction() as db:
            return bool(
                db.execute(
                    "DELETE FROM messages WHERE user_id = ? AND external_id = ? AND kind = 'task'",
                    (user_id, external_id),
                ).rowcount
            )

    def unanswered(self, user_id: int, external_prefix: str) -> list[MessageRow]:
        """The user's messages under `external_prefix` (one chat's) that no answer covers:
        those after the last question of that chat that has an answer (`REPLY_PREFIX`).
        A turn answers a group of quick messages with one answer to its last message, so
        everything before an answered question is answered."""
        pattern = (
            external_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        )
        rows = self._db.rows(
            """SELECT * FROM messages WHERE user_id = ? AND role = 'user'
               AND external_id LIKE ? ESCAPE '\\' AND seq > COALESCE((
                   SELECT MAX(q.seq) FROM messages q JOIN messages a
                   ON a.user_id = q.user_id AND a.external_id = ? || q.id
                   WHERE q.user_id = ? AND q.external_id LIKE ? ESCAPE '\\'), 0)
               ORDER BY seq""",
            (user_id, pattern, REPLY_PREFIX, user_id, pattern),
        )
        return [message_row(row) for row in rows]

    def unarchived(self, user_id: int, limit: int | None = None) -> list[MessageRow]:
        """The user's conversation not yet in a topic, in time order (created_at, then id),
        whatever order it was stored in: an older session ingested after live chat comes
        first. Other kinds are never archived, so they are never waiting."""
        sql = (
            "SELECT * FROM messages WHERE user_id = ? AND topic_id IS NULL "
            f"AND kind = '{MEMORY_KIND}' ORDER BY ts, id"
        )
        params: list[Any] = [user_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [message_row(row) for row in self._db.rows(sql, params)]

    def unarchived_count(self, user_id: int) -> int:
        """How many of the user's conversation messages wait for a topic (`unarchived`
        without reading them)."""
        return self._db.rows(
            "SELECT COUNT(*) FROM messages WHERE user_id = ? AND topic_id IS NULL "
            f"AND kind = '{MEMORY_KIND}'",
            (user_id,),
        )[0][0]

    def users_with_unarchived(self) -> list[tuple[int, int, float]]:
        """(user id, unarchived count, time of the newest unarchived message) per user."""
        rows = self._db.rows(
            "SELECT user_id, COUNT(*), MAX(ts) FROM messages WHERE topic_id IS NULL "
            f"AND kind = '{MEMORY_KIND}' GROUP BY user_id ORDER BY user_id"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def topics_of(self, user_id: int, ids: Sequence[int]) -> dict[int, int | None]:
        """{message id: its topic id (None while unarchived)} of the user's conversation
        messages among `ids`; others' ids, unknown ids and other kinds (which are never
        archived: a vector left from before kinds) are left out."""
        return self._column_of(user_id, ids, "topic_id", f"AND kind = '{MEMORY_KIND}'")

    def authors_of(self, user_id: int, ids: Sequence[int]) -> dict[int, str | None]:
        """{message id: its author (None: none given)} of the user's messages among `ids`;
        others' ids and unknown ids are left out."""
        return self._column_of(user_id, ids, "author")

    def _column_of(
        self, user_id: int, ids: Sequence[int], column: str, condition: str = ""
    ) -> dict[int, Any]:
        """{message id: `column`} of the user's messages among `ids` meeting `condition`
        (SQL after the user and id tests; the project's own text, never input)."""
        ids = stored_ids(ids)
        if not ids:
            return {}
        rows = self._db.rows(
            f"SELECT id, {column} FROM messages WHERE +user_id = ? {condition} "
            f"AND id IN ({placeholders(ids)})",
            (user_id, *ids),
        )
        return {row[0]: row[1] for row in rows}

    def written_between(self, user_id: int, start: float, end: float, limit: int) -> list[int]:
        """Ids of the user's archived conversation messages written in [start, end) (epoch
        seconds), in time order, at most `limit`."""
        rows = self._db.rows(
            "SELECT id FROM messages WHERE user_id = ? AND ts >= ? AND ts < ? "
            f"AND topic_id IS NOT NULL AND kind = '{MEMORY_KIND}' ORDER BY ts, id LIMIT ?",
            (user_id, start, end, limit),
        )
        return [row[0] for row in rows]

    def of_topic(self, user_id: int, topic_id: int) -> list[MessageRow]:
        """A topic's messages: those whose `topic_id` points at it, never its range."""
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND topic_id = ? ORDER BY seq",
            (user_id, topic_id),
        )
        return [message_row(row) for row in rows]

    def external_ids_by_topic(self, user_id: int, topic_ids: Sequence[int]) -> dict[int, list[str]]:
        """External ids of each topic's member messages, in order."""
        members = self._by_topic(user_id, topic_ids, "external_id")
        return {topic_id: [row[0] for row in rows] for topic_id, rows in members.items()}

    def members_of(self, user_id: int, topic_ids: Sequence[int]) -> dict[int, list[Member]]:
        """Each topic's member messages (id, author, role, seq, ts), in conversation order
        (in one statement: a search orders its candidate topics by their best message)."""
        members = self._by_topic(user_id, topic_ids, "id, author, role, seq, ts")
        return {topic_id: [Member(*row) for row in rows] for topic_id, rows in members.items()}

    def _by_topic(
        self, user_id: int, topic_ids: Sequence[int], columns: str
    ) -> dict[int, list[Any]]:
        """`columns` of the user's messages in each of `topic_ids`, in conversation order; a
        topic id that is not one of the user's topics has none."""
        result: dict[int, list[Any]] = {topic_id: [] for topic_id in topic_ids}
        known = stored_ids(topic_ids)
        if not known:
            return result
        rows = self._db.rows(
            f"SELECT topic_id, {columns} FROM messages WHERE user_id = ? "
            f"AND topic_id IN ({placeholders(known)}) ORDER BY topic_id, seq",
            (user_id, *known),
        )  # by topic first: `messages_topic` gives that order (by `seq` alone, SQLite
        # would walk every message of the user in `seq` order)
        for row in rows:
            result[row[0]].append(tuple(row)[1:])
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

    def live_of_segment(self, user_id: int, segment: int) -> list[MessageRow]:
        """The segment's messages from its first unarchived conversation message on, in
        order: what the session view reads (`nodes.response.session_summary`), bounded by
        what is not archived yet however long the segment (a user who never sends /new
        has one segment holding everything)."""
        rows = self._db.rows(
            "SELECT * FROM messages WHERE user_id = ? AND segment = ? AND seq >= ("
            "SELECT MIN(seq) FROM messages WHERE user_id = ? AND segment = ? "
            f"AND topic_id IS NULL AND kind = '{MEMORY_KIND}') ORDER BY seq",
            (user_id, segment, user_id, segment),
        )
        return [message_row(row) for row in rows]

    def newest_in_segment(
        self, user_id: int, segment: int, excluding: Collection[int], up_to: int
    ) -> int:
        """How many of the user's newest messages, other than `excluding`, belong to
        `segment`, counted up to `up_to`: the size of the newest segment (segments only
        grow with `seq`) as far as a caller needs it, reading at most `up_to` rows more
        than `excluding` holds."""
        skipped = set(excluding)
        rows = self._db.rows(
            "SELECT id, segment FROM messages WHERE user_id = ? ORDER BY seq DESC LIMIT ?",
            (user_id, up_to + len(skipped)),
        )
        inside = [row[0] for row in rows if row[1] == segment and row[0] not in skipped]
        return min(up_to, len(inside))

    def holds_all(self, user_id: int, segment: int) -> bool:
        """Whether `segment` holds every message of the user: their first and their last
        message are in it (segments only grow with `seq`). Two rows read through the
        `(user_id, seq)` key, however many messages there are."""
        rows = self._db.rows(
            "SELECT (SELECT segment FROM messages WHERE user_id = ? ORDER BY seq LIMIT 1), "
            "(SELECT segment FROM messages WHERE user_id = ? ORDER BY seq DESC LIMIT 1)",
            (user_id, user_id),
        )
        return rows[0][0] == segment and rows[0][1] == segment

    def count(self, user_id: int) -> int:
        return self._db.rows("SELECT COUNT(*) FROM messages WHERE user_id = ?", (user_id,))[0][0]

    def archived_count(self, user_id: int, up_to: int) -> int:
        """How many of the user's conversation messages are filed in a topic, counted up to
        `up_to` (bounded work, however large the memory)."""
        return self._db.rows(
            "SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE user_id = ? "
            "AND topic_id IS NOT NULL AND kind = 'conversation' LIMIT ?) AS capped",
            (user_id, up_to),
        )[0][0]

    def all_of(self, user_id: int) -> list[MessageRow]:
        rows = self._db.rows("SELECT * FROM messages WHERE user_id = ? ORDER BY seq", (user_id,))
        return [message_row(row) for row in rows]

    def archived_holding(self, user_id: int, words: Sequence[str]) -> list[bool]:
        """For each of `words`, whether one of the user's archived conversation messages
        holds it (matched as `search` matches it)."""
        where = f"AND r.kind = '{MEMORY_KIND}' AND r.topic_id IS NOT NULL"
        return self._db.matching_each("messages", user_id, words, where)

    def search(
        self, user_id: int, text: str, limit: int, segment: int | None = None
    ) -> list[tuple[int, float]]:
        """BM25 full-text search over the user's conversation: (message id, score), best
        first, larger is better."""
        where, params = f"AND r.kind = '{MEMORY_KIND}'", []
        if segment is not None:
            where += " AND r.segment = ?"
            params.append(segment)
        return self._db.fulltext(
            "messages", user_id, text, limit, where, params, narrow=segment is not None
        )
