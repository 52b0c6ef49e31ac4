"""The relational schema: numbered migrations, applied in order, `PRAGMA user_version` the
number of the last one applied."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from stores.relational.tables import (
    KIND_COLUMN,
    SQLITE,
    VECTOR_INDEX,
    answers,
    conversation_titles,
    core_tables,
    deliveries,
    media_tables,
    reminder_offers,
    session_summaries,
    task_tables,
    vector_pending,
)


def _full_text_index(table: str, column: str, user_id: str) -> str:
    """An external-content FTS5 index of `table.column` (with `user_id` as given: indexed
    or UNINDEXED) and the triggers that keep it in step on insert and delete."""
    index = f"{table}_fts"
    return f"""
    CREATE VIRTUAL TABLE {index} USING fts5(
        {column}, {user_id}, content='{table}', content_rowid='id',
        tokenize="unicode61 remove_diacritics 2"
    );
    CREATE TRIGGER {index}_insert AFTER INSERT ON {table} BEGIN
        INSERT INTO {index}(rowid, {column}, user_id)
        VALUES (new.id, new.{column}, new.user_id);
    END;
    CREATE TRIGGER {index}_delete AFTER DELETE ON {table} BEGIN
        INSERT INTO {index}({index}, rowid, {column}, user_id)
        VALUES ('delete', old.id, old.{column}, old.user_id);
    END;
    """


def _fts_with_user(table: str, column: str) -> str:
    """Migration 4 for one full-text index: dropped and created again with `user_id`
    indexed, its triggers recreated, rebuilt from `table`."""
    index = f"{table}_fts"
    return (
        f"""
    DROP TRIGGER IF EXISTS {index}_insert;
    DROP TRIGGER IF EXISTS {index}_delete;
    DROP TRIGGER IF EXISTS {index}_update;
    DROP TABLE {index};
    """
        + _full_text_index(table, column, "user_id")
        + f"INSERT INTO {index}({index}) VALUES ('rebuild');\n"
    )


def _update_trigger(table: str, column: str) -> str:
    """The trigger that keeps `table`'s full-text entry in step with `column` on update."""
    index = f"{table}_fts"
    return f"""
    CREATE TRIGGER {index}_update AFTER UPDATE OF {column} ON {table} BEGIN
        INSERT INTO {index}({index}, rowid, {column}, user_id)
        VALUES ('delete', old.id, old.{column}, old.user_id);
        INSERT INTO {index}(rowid, {column}, user_id)
        VALUES (new.id, new.{column}, new.user_id);
    END;
    """


SUMMARY_UPDATE_TRIGGER = _update_trigger("topics", "summary")


def _words_index(table: str, column: str, *, on_update: bool) -> str:
    """Migration 11 for one full-text index: each user's words indexed apart.

    The index becomes contentless and holds `topica_words(user_id, column)`: each word
    behind its user's tag (`stores.fulltext.user_words`, a function every writing
    connection registers). A query names the user's tag in every term, so it reads only
    the user's postings, and BM25's document frequency of each term counts only the
    user's documents. The triggers pass the same words to FTS5's `delete`."""
    index = f"{table}_fts"
    old = f"topica_words(old.user_id, old.{column})"
    new = f"topica_words(new.user_id, new.{column})"
    forget = f"INSERT INTO {index}({index}, rowid, words) VALUES ('delete', old.id, {old});"
    add = f"INSERT INTO {index}(rowid, words) VALUES (new.id, {new});"
    update = (
        f"""
    CREATE TRIGGER {index}_update AFTER UPDATE OF {column} ON {table} BEGIN
        {forget}
        {add}
    END;"""
        if on_update
        else ""
    )
    return f"""
    DROP TRIGGER IF EXISTS {index}_insert;
    DROP TRIGGER IF EXISTS {index}_delete;
    DROP TRIGGER IF EXISTS {index}_update;
    DROP TABLE {index};
    CREATE VIRTUAL TABLE {index} USING fts5(
        words, content='', tokenize="unicode61 remove_diacritics 2"
    );
    CREATE TRIGGER {index}_insert AFTER INSERT ON {table} BEGIN
        {add}
    END;
    CREATE TRIGGER {index}_delete AFTER DELETE ON {table} BEGIN
        {forget}
    END;{update}
    INSERT INTO {index}(rowid, words) SELECT id, topica_words(user_id, {column}) FROM {table};
    """


FIRST_UNARCHIVED = (
    "CREATE INDEX messages_unarchived ON messages(user_id, seq) WHERE topic_id IS NULL;"
)

MIGRATIONS: tuple[str, ...] = (
    # 1: the whole first schema.
    core_tables(SQLITE, FIRST_UNARCHIVED)
    + _full_text_index("messages", "content", "user_id UNINDEXED")
    + _full_text_index("topics", "summary", "user_id UNINDEXED")
    + SUMMARY_UPDATE_TRIGGER,
    # 2: the rolling summary of each conversation segment (seed 003).
    session_summaries(SQLITE),
    # 3: records whose vector is not (yet) in the vector index. Written in the same
    # transaction as the record and cleared after the upsert, so a vector store that
    # was down never leaves a record unsearchable for good (stores/indexing.py).
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
    # filtering. Rebuilt from their content tables; the triggers are unchanged.
    _fts_with_user("messages", "content")
    + _fts_with_user("topics", "summary")
    + SUMMARY_UPDATE_TRIGGER,
    # 5: what each answer was made from (seed 003's `context_used`): the topics, facts,
    # people and earlier messages its context held (by id, with the reranker's reasons and
    # excerpts), the tools called, the fallbacks taken; and whether the user stopped it
    # while it was written (`partial`). Goes when its message goes.
    answers(SQLITE),
    # 6: memory of what messages carry and of what changed in them.
    # - `attachments`: a document's text, kept with its message (which stores only its
    #   label), split into `passages` that are indexed like messages (full text here,
    #   vectors through the queue, whose kinds gain 'passages'). Both go with the message.
    # - `message_edits`: every edit of a stored message (the old and the new text); the
    #   message's full-text entry follows its content on update.
    # - `stale_topics`: topics whose messages changed since they were summarised; the
    #   memory graph summarises them again and clears the mark.
    media_tables(SQLITE)
    + _update_trigger("messages", "content")
    + vector_pending(SQLITE, "vector_pending_new")
    + """
    INSERT INTO vector_pending_new SELECT user_id, kind, record_id FROM vector_pending;
    DROP TABLE vector_pending;
    ALTER TABLE vector_pending_new RENAME TO vector_pending;
    """
    + _full_text_index("passages", "content", "user_id"),
    # 7: each message's kind (core.records.MessageKind). Only 'conversation' becomes memory;
    # answers written from memory alone with no model (answered_by 'memory') are
    # recognised by their answer record and marked. Unarchived messages are read in time
    # order (created_at, then id), whatever the order they were stored in. The marked
    # answers are queued for the vector index, which drops the vectors of other kinds.
    f"""
    ALTER TABLE messages ADD COLUMN {KIND_COLUMN};
    UPDATE messages SET kind = 'memory_only_answer'
        WHERE id IN (SELECT message_id FROM answers WHERE answered_by = 'memory');
    INSERT OR IGNORE INTO vector_pending (user_id, kind, record_id)
        SELECT user_id, 'messages', id FROM messages WHERE kind != 'conversation';
    DROP INDEX messages_unarchived;
    CREATE INDEX messages_unarchived ON messages(user_id, ts, id)
        WHERE topic_id IS NULL AND kind = 'conversation';
    """,
    # 8: which embedder made the vector index (`stores.indexing`): a store opened with
    # another one says so and `topica reindex` rebuilds it, instead of silently finding
    # nothing (collections are named after the embedder).
    VECTOR_INDEX,
    # 9: which answers reached the user (the bot's sendMessage succeeded). An answer is
    # stored before it is sent; one whose process died in between is sent when Telegram
    # delivers its question again, instead of being taken for answered. Every answer
    # stored before this migration counts as delivered.
    deliveries(SQLITE),
    # 10: messages by the time they were written, for questions that name a day or a
    # month (`MessageRepository.written_between`).
    """
    CREATE INDEX messages_time ON messages(user_id, ts);
    """,
    # 11: each user's words indexed apart (`_words_index`).
    _words_index("messages", "content", on_update=True)
    + _words_index("topics", "summary", on_update=True)
    + _words_index("passages", "content", on_update=False),
    # 12: scheduled tasks and reminders (`stores.relational.tasks`), their runs, and each
    # user's time zone.
    task_tables(SQLITE),
    # 13: a scheduled task's message is a kind of its own ('task'). Widening a CHECK
    # constraint changes no stored row, so the table's recorded SQL is edited in place
    # (SQLite's documented way for such changes) instead of rebuilding `messages` with
    # its full-text indexes, triggers and references.
    """
    PRAGMA writable_schema = ON;
    UPDATE sqlite_master
        SET sql = replace(sql, '''media_description'')', '''media_description'', ''task'')')
        WHERE type = 'table' AND name = 'messages';
    PRAGMA writable_schema = RESET;
    """,
    # 14: the title of each imported conversation (a ChatGPT conversation, a Telegram
    # chat), keyed by its messages' external id prefix (`SessionRepository.titles`).
    conversation_titles(SQLITE),
    # 15: reminders offered for what the user promised or planned (`stores.relational.
    # offers`), each kept until the user accepts or dismisses it.
    reminder_offers(SQLITE),
)


def statements(script: str) -> Iterator[str]:
    """The SQL statements of a script, each whole (a trigger's body included)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending.strip()
            pending = ""
    if pending.strip(" \n;"):
        raise ValueError(f"incomplete SQL statement: {pending.strip()[:80]!r}")
