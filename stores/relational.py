"""The relational store: messages, topics, facts (with history) and people in SQLite.

Every public method takes the user id and every statement filters on it: one
user's call can never read or change another user's rows. Writes that belong
together (a chunk's topics and its messages' `topic_id`, a merge) run in one
transaction. The connection is shared between threads behind a lock, so async
callers go through `asyncio.to_thread`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from stores.fulltext import fts_match_expression
from stores.records import (
    FactRow,
    FactType,
    MessageRow,
    NewMessage,
    PersonRow,
    SessionSummaryRow,
    TopicRow,
)


def _fts_with_user(table: str, column: str) -> str:
    """Migration 4 for one full-text index: dropped and created again with `user_id`
    indexed, rebuilt from `table`, its insert and delete triggers recreated."""
    index = f"{table}_fts"
    return f"""
    DROP TRIGGER IF EXISTS {index}_insert;
    DROP TRIGGER IF EXISTS {index}_delete;
    DROP TRIGGER IF EXISTS {index}_update;
    DROP TABLE {index};
    CREATE VIRTUAL TABLE {index} USING fts5(
        {column}, user_id, content='{table}', content_rowid='id',
        tokenize="unicode61 remove_diacritics 2"
    );
    INSERT INTO {index}({index}) VALUES ('rebuild');
    CREATE TRIGGER {index}_insert AFTER INSERT ON {table} BEGIN
        INSERT INTO {index}(rowid, {column}, user_id)
        VALUES (new.id, new.{column}, new.user_id);
    END;
    CREATE TRIGGER {index}_delete AFTER DELETE ON {table} BEGIN
        INSERT INTO {index}({index}, rowid, {column}, user_id)
        VALUES ('delete', old.id, old.{column}, old.user_id);
    END;
    """


MIGRATIONS: tuple[str, ...] = (
    # 1: the whole first schema.
    """
    CREATE TABLE users (
        user_id INTEGER PRIMARY KEY,
        current_segment INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE TABLE topics (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id INTEGER NOT NULL,
        summary TEXT NOT NULL CHECK (length(trim(summary)) > 0),
        start_msg_id INTEGER NOT NULL,
        end_msg_id INTEGER NOT NULL,
        size_chars INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        first_message_at TEXT NOT NULL,
        last_message_at TEXT NOT NULL,
        facts_extracted INTEGER NOT NULL DEFAULT 0,
        consolidation_checked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        CHECK (start_msg_id <= end_msg_id)
    );
    CREATE INDEX topics_user ON topics(user_id, start_msg_id);
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        external_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        author TEXT,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        ts REAL NOT NULL,
        topic_id INTEGER REFERENCES topics(id) ON DELETE SET NULL,
        segment INTEGER NOT NULL DEFAULT 0,
        UNIQUE (user_id, seq),
        UNIQUE (user_id, external_id)
    );
    CREATE INDEX messages_unarchived ON messages(user_id, seq) WHERE topic_id IS NULL;
    CREATE INDEX messages_topic ON messages(user_id, topic_id, seq);
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id INTEGER NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('identity', 'context', 'status')),
        content TEXT NOT NULL CHECK (length(trim(content)) > 0),
        importance INTEGER NOT NULL CHECK (importance BETWEEN 0 AND 100),
        topic_id INTEGER,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX facts_user ON facts(user_id);
    CREATE TABLE fact_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        fact_id INTEGER NOT NULL,
        user_id INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('add', 'update', 'delete')),
        old_content TEXT,
        new_content TEXT,
        old_importance INTEGER,
        new_importance INTEGER,
        reason TEXT,
        topic_id INTEGER,
        at TEXT NOT NULL
    );
    CREATE INDEX fact_history_user ON fact_history(user_id, fact_id);
    CREATE TABLE people (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id INTEGER NOT NULL,
        name TEXT NOT NULL CHECK (length(trim(name)) > 0),
        aliases TEXT NOT NULL DEFAULT '[]',
        username TEXT,
        circle TEXT,
        bio TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX people_user ON people(user_id);

    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, user_id UNINDEXED, content='messages', content_rowid='id',
        tokenize="unicode61 remove_diacritics 2"
    );
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, user_id)
        VALUES (new.id, new.content, new.user_id);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, user_id)
        VALUES ('delete', old.id, old.content, old.user_id);
    END;
    CREATE VIRTUAL TABLE topics_fts USING fts5(
        summary, user_id UNINDEXED, content='topics', content_rowid='id',
        tokenize="unicode61 remove_diacritics 2"
    );
    CREATE TRIGGER topics_fts_insert AFTER INSERT ON topics BEGIN
        INSERT INTO topics_fts(rowid, summary, user_id)
        VALUES (new.id, new.summary, new.user_id);
    END;
    CREATE TRIGGER topics_fts_delete AFTER DELETE ON topics BEGIN
        INSERT INTO topics_fts(topics_fts, rowid, summary, user_id)
        VALUES ('delete', old.id, old.summary, old.user_id);
    END;
    CREATE TRIGGER topics_fts_update AFTER UPDATE OF summary ON topics BEGIN
        INSERT INTO topics_fts(topics_fts, rowid, summary, user_id)
        VALUES ('delete', old.id, old.summary, old.user_id);
        INSERT INTO topics_fts(rowid, summary, user_id)
        VALUES (new.id, new.summary, new.user_id);
    END;
    """,
    # 2: the rolling summary of each conversation segment (seed 003).
    """
    CREATE TABLE session_summaries (
        user_id INTEGER NOT NULL,
        segment INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        summary TEXT NOT NULL,
        written_by TEXT NOT NULL CHECK (written_by IN ('llm', 'extractive')),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, segment),
        CHECK (first_seq <= last_seq)
    );
    """,
    # 3: records whose vector is not (yet) in the vector index. Written in the same
    # transaction as the record and cleared after the upsert, so a vector store that
    # was down never leaves a record unsearchable for good (graphs/archive.reindex_pending).
    """
    CREATE TABLE vector_pending (
        user_id INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('topics', 'facts', 'people', 'messages')),
        record_id INTEGER NOT NULL,
        PRIMARY KEY (user_id, kind, record_id)
    );
    INSERT INTO vector_pending (user_id, kind, record_id)
        SELECT user_id, 'messages', id FROM messages;
    INSERT INTO vector_pending (user_id, kind, record_id)
        SELECT user_id, 'topics', id FROM topics;
    """,
    # 4: the full-text indexes index user_id too, so a search scores only the user's
    # matches (`user_id : N AND content : (...)`) instead of every user's and then
    # filtering: message search 5.2 -> 1.7 ms for a user with 624 messages in a store
    # of 75,000 (the one user holding 60,000 pays 11 -> 15 ms). Rebuilt from their
    # content tables (1.3 s for that store); the triggers are unchanged.
    _fts_with_user("messages", "content")
    + _fts_with_user("topics", "summary")
    + """
    CREATE TRIGGER topics_fts_update AFTER UPDATE OF summary ON topics BEGIN
        INSERT INTO topics_fts(topics_fts, rowid, summary, user_id)
        VALUES ('delete', old.id, old.summary, old.user_id);
        INSERT INTO topics_fts(rowid, summary, user_id)
        VALUES (new.id, new.summary, new.user_id);
    END;
    """,
)


class StoreError(Exception):
    """A request the store refuses (unknown id, id of another user, bad value)."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_timestamp(value: str) -> datetime:
    """ISO-8601 to an aware datetime; a naive time is taken as UTC."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _users_rows(user_id: int, column: str, expression: str) -> str:
    """A full-text MATCH for `expression` in `column`, among the user's rows only.

    The index reads only the user's matches (the `user_id` column is indexed, weighted
    0 in bm25); the query still checks `user_id` on the joined row as well, since the
    tokenizer reads `-5` as `5`.
    """
    return f"user_id : {abs(int(user_id))} AND {column} : ({expression})"


def _placeholders(values: Sequence[Any]) -> str:
    """`?,?,…` for an `IN (…)` list.

    Lookups by id write `+user_id = ? AND id IN (…)`: the unary `+` keeps the planner
    off the user_id indexes, so it always takes the primary key. Without planner
    statistics (a store is never ANALYZEd) SQLite otherwise scans all of the user's
    rows through a user_id index: 50 topics of a user with 30,000 took 7.6 ms instead
    of 0.2 ms, and the cost grows with the user's memory.
    """
    return ",".join("?" * len(values))


class RelationalStore:
    """SQLite persistence for one Topica installation (all users, strictly separated)."""

    def __init__(self, path: Path | str, busy_timeout_s: float = 10.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._migrate()

    # -- plumbing ---------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"
                )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction; nested inside another (same thread), a savepoint of it."""
        with self._lock:
            if self._depth:
                savepoint = f"nested_{self._depth}"
                self._db.execute(f"SAVEPOINT {savepoint}")
                self._depth += 1
                try:
                    yield self._db
                except BaseException:
                    self._db.execute(f"ROLLBACK TO {savepoint}")
                    self._db.execute(f"RELEASE {savepoint}")
                    raise
                finally:
                    self._depth -= 1
                self._db.execute(f"RELEASE {savepoint}")
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self._db.execute("COMMIT")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Make several store calls one transaction: all of them happen, or none."""
        with self._transaction():
            yield

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @property
    def schema_version(self) -> int:
        return self._rows("PRAGMA user_version")[0][0]

    # -- users ------------------------------------------------------------------

    def _ensure_user(self, db: sqlite3.Connection, user_id: int) -> None:
        db.execute(
            "INSERT OR IGNORE INTO users(user_id, created_at) VALUES (?, ?)", (user_id, now_iso())
        )

    def current_segment(self, user_id: int) -> int:
        rows = self._rows("SELECT current_segment FROM users WHERE user_id = ?", (user_id,))
        return rows[0][0] if rows else 0

    def start_new_segment(self, user_id: int) -> int:
        """`/new`: later messages belong to a fresh conversation segment."""
        with self._transaction() as db:
            self._ensure_user(db, user_id)
            db.execute(
                "UPDATE users SET current_segment = current_segment + 1 WHERE user_id = ?",
                (user_id,),
            )
            return db.execute(
                "SELECT current_segment FROM users WHERE user_id = ?", (user_id,)
            ).fetchone()[0]

    def user_ids(self) -> list[int]:
        return [row[0] for row in self._rows("SELECT user_id FROM users ORDER BY user_id")]

    # -- messages ---------------------------------------------------------------

    def add_messages(self, user_id: int, messages: Sequence[NewMessage]) -> list[MessageRow]:
        """Store messages in order, all or nothing; ones already stored are skipped.

        Returns the newly stored rows. A message is "already stored" when the
        user has one with the same external id, so re-ingesting is harmless.
        """
        with self._transaction() as db:
            self._ensure_user(db, user_id)
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
            _mark_pending(db, user_id, "messages", new_ids)
        return self.messages_by_ids(user_id, new_ids)

    def messages_by_ids(self, user_id: int, ids: Sequence[int]) -> list[MessageRow]:
        if not ids:
            return []
        rows = self._rows(
            f"SELECT * FROM messages WHERE +user_id = ? AND id IN ({_placeholders(ids)}) "
            "ORDER BY seq",
            (user_id, *ids),
        )
        return [_message(row) for row in rows]

    def unarchived_messages(self, user_id: int, limit: int | None = None) -> list[MessageRow]:
        sql = "SELECT * FROM messages WHERE user_id = ? AND topic_id IS NULL ORDER BY seq"
        params: list[Any] = [user_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_message(row) for row in self._rows(sql, params)]

    def users_with_unarchived(self) -> list[tuple[int, int, float]]:
        """(user id, unarchived count, time of the newest unarchived message) per user."""
        rows = self._rows(
            "SELECT user_id, COUNT(*), MAX(ts) FROM messages WHERE topic_id IS NULL "
            "GROUP BY user_id ORDER BY user_id"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def users_with_topics_without_facts(self) -> list[int]:
        rows = self._rows(
            "SELECT DISTINCT user_id FROM topics WHERE facts_extracted = 0 ORDER BY user_id"
        )
        return [row[0] for row in rows]

    def topic_messages(self, user_id: int, topic_id: int) -> list[MessageRow]:
        """A topic's messages: those whose `topic_id` points at it, never its range."""
        rows = self._rows(
            "SELECT * FROM messages WHERE user_id = ? AND topic_id = ? ORDER BY seq",
            (user_id, topic_id),
        )
        return [_message(row) for row in rows]

    def topic_message_ids(self, user_id: int, topic_ids: Sequence[int]) -> dict[int, list[str]]:
        """External ids of each topic's member messages, in order."""
        result: dict[int, list[str]] = {topic_id: [] for topic_id in topic_ids}
        if not topic_ids:
            return result
        rows = self._rows(
            f"SELECT topic_id, external_id FROM messages WHERE user_id = ? "
            f"AND topic_id IN ({_placeholders(topic_ids)}) ORDER BY seq",
            (user_id, *topic_ids),
        )
        for row in rows:
            result[row[0]].append(row[1])
        return result

    def recent_messages(
        self, user_id: int, limit: int, segment: int | None = None
    ) -> list[MessageRow]:
        """The newest `limit` messages (optionally of one segment), oldest first."""
        sql = "SELECT * FROM messages WHERE user_id = ?"
        params: list[Any] = [user_id]
        if segment is not None:
            sql += " AND segment = ?"
            params.append(segment)
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        return [_message(row) for row in reversed(self._rows(sql, params))]

    def segment_messages(self, user_id: int, segment: int) -> list[MessageRow]:
        rows = self._rows(
            "SELECT * FROM messages WHERE user_id = ? AND segment = ? ORDER BY seq",
            (user_id, segment),
        )
        return [_message(row) for row in rows]

    def message_count(self, user_id: int) -> int:
        return self._rows("SELECT COUNT(*) FROM messages WHERE user_id = ?", (user_id,))[0][0]

    def all_messages(self, user_id: int) -> list[MessageRow]:
        rows = self._rows("SELECT * FROM messages WHERE user_id = ? ORDER BY seq", (user_id,))
        return [_message(row) for row in rows]

    def search_messages(
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
        params: list[Any] = [_users_rows(user_id, "content", expression), user_id]
        if segment is not None:
            sql += " AND m.segment = ?"
            params.append(segment)
        sql += " ORDER BY score DESC LIMIT ?"
        params.append(limit)
        return [(row[0], row[1]) for row in self._rows(sql, params)]

    # -- session summaries --------------------------------------------------------

    def session_summary(self, user_id: int, segment: int) -> SessionSummaryRow | None:
        """The rolling summary of a segment's older messages, if one was written."""
        rows = self._rows(
            "SELECT * FROM session_summaries WHERE user_id = ? AND segment = ?",
            (user_id, segment),
        )
        return SessionSummaryRow(**dict(rows[0])) if rows else None

    def save_session_summary(
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
        with self._transaction() as db:
            self._ensure_user(db, user_id)
            db.execute(
                "INSERT OR REPLACE INTO session_summaries (user_id, segment, first_seq, "
                "last_seq, summary, written_by, updated_at) VALUES (:user_id, :segment, "
                ":first_seq, :last_seq, :summary, :written_by, :updated_at)",
                row,
            )
        return row

    # -- topics -----------------------------------------------------------------

    def save_topics(
        self, user_id: int, drafts: Sequence[tuple[str, Sequence[int]]]
    ) -> list[TopicRow]:
        """Create topics from (summary, member message ids) and point messages at them.

        One transaction for the whole chunk. Idempotent: members that already
        belong to a topic are left where they are, and a draft whose members
        are all archived yields the topic they belong to instead of a new one.
        """
        saved: list[int] = []
        with self._transaction() as db:
            for summary, member_ids in drafts:
                if not summary.strip():
                    raise StoreError("a topic needs a non-empty summary")
                rows = db.execute(
                    f"SELECT id, content, created_at, ts, topic_id FROM messages "
                    f"WHERE +user_id = ? AND id IN ({_placeholders(member_ids)}) ORDER BY seq",
                    (user_id, *member_ids),
                ).fetchall()
                if len(rows) != len(set(member_ids)):
                    raise StoreError(f"topic members are not all messages of user {user_id}")
                free = [row for row in rows if row["topic_id"] is None]
                if not free:
                    saved.extend(dict.fromkeys(row["topic_id"] for row in rows))
                    continue
                cursor = db.execute(
                    """INSERT INTO topics (user_id, summary, start_msg_id, end_msg_id, size_chars,
                       message_count, first_message_at, last_message_at, created_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
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
                topic_id = cursor.lastrowid
                free_ids = [row["id"] for row in free]
                db.execute(
                    f"UPDATE messages SET topic_id = ? WHERE +user_id = ? "
                    f"AND id IN ({_placeholders(free_ids)})",
                    (topic_id, user_id, *free_ids),
                )
                saved.append(topic_id)
            _mark_pending(db, user_id, "topics", saved)
        return self.topics_by_ids(user_id, list(dict.fromkeys(saved)))

    def topics_by_ids(self, user_id: int, ids: Sequence[int]) -> list[TopicRow]:
        """The user's topics among `ids`, in the order of `ids`; others' ids are ignored."""
        if not ids:
            return []
        rows = self._rows(
            f"SELECT * FROM topics WHERE +user_id = ? AND id IN ({_placeholders(ids)})",
            (user_id, *ids),
        )
        by_id = {row["id"]: _topic(row) for row in rows}
        return [by_id[topic_id] for topic_id in ids if topic_id in by_id]

    def get_topic(self, user_id: int, topic_id: int) -> TopicRow:
        found = self.topics_by_ids(user_id, [topic_id])
        if not found:
            raise StoreError(f"topic {topic_id} not found for user {user_id}")
        return found[0]

    def list_topics(self, user_id: int) -> list[TopicRow]:
        rows = self._rows(
            "SELECT * FROM topics WHERE user_id = ? ORDER BY start_msg_id, id", (user_id,)
        )
        return [_topic(row) for row in rows]

    def topics_to_consolidate(self, user_id: int, limit: int) -> list[TopicRow]:
        rows = self._rows(
            "SELECT * FROM topics WHERE user_id = ? AND consolidation_checked = 0 "
            "ORDER BY id LIMIT ?",
            (user_id, limit),
        )
        return [_topic(row) for row in rows]

    def mark_consolidation_checked(self, user_id: int, topic_ids: Sequence[int]) -> None:
        if topic_ids:
            with self._transaction() as db:
                db.execute(
                    f"UPDATE topics SET consolidation_checked = 1 WHERE +user_id = ? "
                    f"AND id IN ({_placeholders(topic_ids)})",
                    (user_id, *topic_ids),
                )

    def merge_topics(
        self, user_id: int, source_id: int, target_id: int, merged_summary: str
    ) -> TopicRow:
        """Fold `source` into `target`: bounds widened, sizes summed, members re-pointed.

        The source is deleted; the target is marked consolidation-checked.
        Membership moves by `topic_id`, so messages of other topics lying
        inside the widened range are untouched.
        """
        if source_id == target_id:
            raise StoreError("a topic cannot be merged into itself")
        if not merged_summary.strip():
            raise StoreError("a merged topic needs a non-empty summary")
        with self._transaction() as db:
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
            firsts = sorted([source["first_message_at"], target["first_message_at"]], key=_ts)
            lasts = sorted([source["last_message_at"], target["last_message_at"]], key=_ts)
            db.execute(
                """UPDATE topics SET summary = ?, start_msg_id = ?, end_msg_id = ?,
                   size_chars = ?, message_count = ?, first_message_at = ?, last_message_at = ?,
                   consolidation_checked = 1, facts_extracted = facts_extracted AND ?
                   WHERE user_id = ? AND id = ?""",
                (
                    merged_summary.strip(),
                    min(source["start_msg_id"], target["start_msg_id"]),
                    max(source["end_msg_id"], target["end_msg_id"]),
                    source["size_chars"] + target["size_chars"],
                    source["message_count"] + target["message_count"],
                    firsts[0],
                    lasts[-1],
                    source["facts_extracted"],
                    user_id,
                    target_id,
                ),
            )
            db.execute("DELETE FROM topics WHERE user_id = ? AND id = ?", (user_id, source_id))
            _mark_pending(db, user_id, "topics", [target_id])
        return self.get_topic(user_id, target_id)

    def topics_without_facts(self, user_id: int, limit: int) -> list[TopicRow]:
        rows = self._rows(
            "SELECT * FROM topics WHERE user_id = ? AND facts_extracted = 0 ORDER BY id LIMIT ?",
            (user_id, limit),
        )
        return [_topic(row) for row in rows]

    def mark_facts_extracted(self, user_id: int, topic_ids: Sequence[int]) -> None:
        if topic_ids:
            with self._transaction() as db:
                db.execute(
                    f"UPDATE topics SET facts_extracted = 1 WHERE +user_id = ? "
                    f"AND id IN ({_placeholders(topic_ids)})",
                    (user_id, *topic_ids),
                )

    def delete_topic(self, user_id: int, topic_id: int) -> None:
        """Forget a topic and its messages (the user asked for it)."""
        with self._transaction() as db:
            found = db.execute(
                "SELECT 1 FROM topics WHERE user_id = ? AND id = ?", (user_id, topic_id)
            ).fetchone()
            if not found:
                raise StoreError(f"topic {topic_id} not found for user {user_id}")
            db.execute(
                "DELETE FROM messages WHERE user_id = ? AND topic_id = ?", (user_id, topic_id)
            )
            db.execute("DELETE FROM topics WHERE user_id = ? AND id = ?", (user_id, topic_id))

    def search_topics(self, user_id: int, text: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over the user's topic summaries: (topic id, score), best first."""
        expression = fts_match_expression(text)
        if expression is None:
            return []
        rows = self._rows(
            "SELECT t.id, -bm25(topics_fts, 1.0, 0.0) AS score FROM topics_fts "
            "JOIN topics t ON t.id = topics_fts.rowid "
            "WHERE topics_fts MATCH ? AND t.user_id = ? ORDER BY score DESC LIMIT ?",
            (_users_rows(user_id, "summary", expression), user_id, limit),
        )
        return [(row[0], row[1]) for row in rows]

    # -- the vector index's to-do list --------------------------------------------

    def pending_vectors(self, user_id: int, kind: str, limit: int = 1000) -> list[int]:
        rows = self._rows(
            "SELECT record_id FROM vector_pending WHERE user_id = ? AND kind = ? "
            "ORDER BY record_id LIMIT ?",
            (user_id, kind, limit),
        )
        return [row[0] for row in rows]

    def clear_pending_vectors(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        if ids:
            with self._transaction() as db:
                db.execute(
                    f"DELETE FROM vector_pending WHERE user_id = ? AND kind = ? "
                    f"AND record_id IN ({_placeholders(ids)})",
                    (user_id, kind, *ids),
                )

    def mark_pending_vectors(self, user_id: int, kind: str, ids: Sequence[int]) -> None:
        with self._transaction() as db:
            _mark_pending(db, user_id, kind, ids)

    # -- facts ------------------------------------------------------------------

    def add_fact(
        self,
        user_id: int,
        content: str,
        fact_type: FactType,
        importance: int,
        topic_id: int | None = None,
        reason: str | None = None,
    ) -> FactRow:
        _check_fact(content, fact_type, importance)
        stamp = now_iso()
        with self._transaction() as db:
            self._ensure_user(db, user_id)
            fact_id = db.execute(
                "INSERT INTO facts (user_id, type, content, importance, topic_id, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user_id, fact_type, content.strip(), importance, topic_id, stamp, stamp),
            ).lastrowid
            db.execute(
                "INSERT INTO fact_history (fact_id, user_id, action, new_content, new_importance, "
                "reason, topic_id, at) VALUES (?, ?, 'add', ?, ?, ?, ?, ?)",
                (fact_id, user_id, content.strip(), importance, reason, topic_id, stamp),
            )
            _mark_pending(db, user_id, "facts", [fact_id])
        return self.get_fact(user_id, fact_id)

    def update_fact(
        self,
        user_id: int,
        fact_id: int,
        content: str | None = None,
        importance: int | None = None,
        fact_type: FactType | None = None,
        reason: str | None = None,
        topic_id: int | None = None,
    ) -> FactRow:
        old = self.get_fact(user_id, fact_id)
        new_content = (content or old["content"]).strip()
        new_importance = old["importance"] if importance is None else importance
        new_type = fact_type or old["type"]
        _check_fact(new_content, new_type, new_importance)
        stamp = now_iso()
        with self._transaction() as db:
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
            _mark_pending(db, user_id, "facts", [fact_id])
        return self.get_fact(user_id, fact_id)

    def delete_fact(
        self, user_id: int, fact_id: int, reason: str | None = None, topic_id: int | None = None
    ) -> FactRow:
        old = self.get_fact(user_id, fact_id)
        with self._transaction() as db:
            db.execute("DELETE FROM facts WHERE user_id = ? AND id = ?", (user_id, fact_id))
            db.execute(
                "INSERT INTO fact_history (fact_id, user_id, action, old_content, old_importance, "
                "reason, topic_id, at) VALUES (?, ?, 'delete', ?, ?, ?, ?, ?)",
                (fact_id, user_id, old["content"], old["importance"], reason, topic_id, now_iso()),
            )
        return old

    def get_fact(self, user_id: int, fact_id: int) -> FactRow:
        rows = self._rows("SELECT * FROM facts WHERE user_id = ? AND id = ?", (user_id, fact_id))
        if not rows:
            raise StoreError(f"fact {fact_id} not found for user {user_id}")
        return _fact(rows[0])

    def list_facts(self, user_id: int) -> list[FactRow]:
        rows = self._rows(
            "SELECT * FROM facts WHERE user_id = ? ORDER BY importance DESC, id", (user_id,)
        )
        return [_fact(row) for row in rows]

    def facts_by_ids(self, user_id: int, ids: Sequence[int]) -> list[FactRow]:
        if not ids:
            return []
        rows = self._rows(
            f"SELECT * FROM facts WHERE +user_id = ? AND id IN ({_placeholders(ids)})",
            (user_id, *ids),
        )
        by_id = {row["id"]: _fact(row) for row in rows}
        return [by_id[fact_id] for fact_id in ids if fact_id in by_id]

    def core_facts(self, user_id: int, min_importance: int = 90) -> list[FactRow]:
        """Identity facts and very important ones: they always go into the system prompt."""
        rows = self._rows(
            "SELECT * FROM facts WHERE user_id = ? AND (type = 'identity' OR importance >= ?) "
            "ORDER BY importance DESC, id",
            (user_id, min_importance),
        )
        return [_fact(row) for row in rows]

    def fact_history(self, user_id: int) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM fact_history WHERE user_id = ? ORDER BY id", (user_id,))
        return [_row(row) for row in rows]

    # -- people -----------------------------------------------------------------

    def add_person(
        self,
        user_id: int,
        name: str,
        aliases: Sequence[str] = (),
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow:
        if not name.strip():
            raise StoreError("a person needs a name")
        stamp = now_iso()
        with self._transaction() as db:
            self._ensure_user(db, user_id)
            person_id = db.execute(
                "INSERT INTO people (user_id, name, aliases, username, circle, bio, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user_id,
                    name.strip(),
                    json.dumps(sorted(set(aliases)), ensure_ascii=False),
                    username,
                    circle,
                    bio,
                    stamp,
                    stamp,
                ),
            ).lastrowid
            _mark_pending(db, user_id, "people", [person_id])
        return self.get_person(user_id, person_id)

    def update_person(
        self,
        user_id: int,
        person_id: int,
        *,
        name: str | None = None,
        aliases: Sequence[str] | None = None,
        username: str | None = None,
        circle: str | None = None,
        bio: str | None = None,
    ) -> PersonRow:
        old = self.get_person(user_id, person_id)
        merged_aliases = sorted(set(old["aliases"]) | set(aliases or ()))
        with self._transaction() as db:
            db.execute(
                "UPDATE people SET name = ?, aliases = ?, username = ?, circle = ?, bio = ?, "
                "updated_at = ? WHERE user_id = ? AND id = ?",
                (
                    (name or old["name"]).strip(),
                    json.dumps(merged_aliases, ensure_ascii=False),
                    username if username is not None else old["username"],
                    circle if circle is not None else old["circle"],
                    bio if bio is not None else old["bio"],
                    now_iso(),
                    user_id,
                    person_id,
                ),
            )
            _mark_pending(db, user_id, "people", [person_id])
        return self.get_person(user_id, person_id)

    def merge_people(self, user_id: int, source_id: int, target_id: int) -> PersonRow:
        """Fold a duplicate person into another: names become aliases, bios joined."""
        source = self.get_person(user_id, source_id)
        target = self.get_person(user_id, target_id)
        bios = [bio for bio in (target["bio"], source["bio"]) if bio]
        with self._transaction() as db:
            db.execute(
                "UPDATE people SET aliases = ?, username = ?, circle = ?, bio = ?, updated_at = ? "
                "WHERE user_id = ? AND id = ?",
                (
                    json.dumps(
                        sorted(
                            (set(target["aliases"]) | set(source["aliases"]) | {source["name"]})
                            - {target["name"]}
                        ),
                        ensure_ascii=False,
                    ),
                    target["username"] or source["username"],
                    target["circle"] or source["circle"],
                    "\n".join(dict.fromkeys(bios)) or None,
                    now_iso(),
                    user_id,
                    target_id,
                ),
            )
            db.execute("DELETE FROM people WHERE user_id = ? AND id = ?", (user_id, source_id))
            _mark_pending(db, user_id, "people", [target_id])
        return self.get_person(user_id, target_id)

    def get_person(self, user_id: int, person_id: int) -> PersonRow:
        rows = self._rows("SELECT * FROM people WHERE user_id = ? AND id = ?", (user_id, person_id))
        if not rows:
            raise StoreError(f"person {person_id} not found for user {user_id}")
        return _person(rows[0])

    def list_people(self, user_id: int) -> list[PersonRow]:
        rows = self._rows("SELECT * FROM people WHERE user_id = ? ORDER BY id", (user_id,))
        return [_person(row) for row in rows]

    def people_by_ids(self, user_id: int, ids: Sequence[int]) -> list[PersonRow]:
        if not ids:
            return []
        rows = self._rows(
            f"SELECT * FROM people WHERE +user_id = ? AND id IN ({_placeholders(ids)})",
            (user_id, *ids),
        )
        by_id = {row["id"]: _person(row) for row in rows}
        return [by_id[person_id] for person_id in ids if person_id in by_id]


def _mark_pending(db: sqlite3.Connection, user_id: int, kind: str, ids: Sequence[int]) -> None:
    db.executemany(
        "INSERT OR IGNORE INTO vector_pending (user_id, kind, record_id) VALUES (?, ?, ?)",
        [(user_id, kind, record_id) for record_id in ids],
    )


def _ts(value: str) -> float:
    return parse_timestamp(value).timestamp()


def _check_fact(content: str, fact_type: str, importance: int) -> None:
    if not content.strip():
        raise StoreError("a fact needs content")
    if fact_type not in ("identity", "context", "status"):
        raise StoreError(f"unknown fact type {fact_type!r}")
    if not 0 <= importance <= 100:
        raise StoreError(f"importance must be within 0..100, got {importance}")


def _row(row: sqlite3.Row) -> dict[str, Any]:
    data = dict(row)
    data.pop("user_id", None)
    return data


def _message(row: sqlite3.Row) -> MessageRow:
    return MessageRow(**_row(row))


def _topic(row: sqlite3.Row) -> TopicRow:
    data = _row(row)
    data["facts_extracted"] = bool(data["facts_extracted"])
    data["consolidation_checked"] = bool(data["consolidation_checked"])
    return TopicRow(**data)


def _fact(row: sqlite3.Row) -> FactRow:
    return FactRow(**_row(row))


def _person(row: sqlite3.Row) -> PersonRow:
    data = _row(row)
    data["aliases"] = json.loads(data["aliases"])
    return PersonRow(**data)
