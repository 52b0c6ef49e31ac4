"""The tables both engines create, written once in one engine's types (`Types`): SQLite's
migrations (`stores.relational.schema`) and PostgreSQL's (`stores.relational.postgres_schema`)
build their scripts from these. The text for SQLite is exactly what its migrations always
wrote (SQLite keeps each table's SQL as written), tests/unit/test_schema_record.py checks
both engines' result."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Types:
    """One engine's words for what the tables need."""

    identity: str  # an id column: generated, the primary key
    id: str  # a user, message or other record's id, and other counts that grow with use
    real: str
    json_valid: str  # a check that `context_used` holds JSON
    searchable: str = ""  # the full-text columns of a table searched through `{column}`

    def full_text(self, column: str) -> str:
        """The columns a table searched through `column` gains (none where the index is
        a table of its own)."""
        return self.searchable.format(column=column)


SQLITE = Types(
    identity="INTEGER PRIMARY KEY AUTOINCREMENT",
    id="INTEGER",
    real="REAL",
    json_valid="json_valid(context_used)",
)

MESSAGE_KINDS = "'conversation', 'memory_only_answer', 'command', 'media_description'"
"""The kinds of message when the kind became a column (a scheduled task's came later)."""

KIND_COLUMN = f"""kind TEXT NOT NULL DEFAULT 'conversation'
        CHECK (kind IN ({MESSAGE_KINDS}))"""


def message_part(t: Types) -> str:
    """The first columns of a table whose rows belong to one of the user's messages (and
    go with it): the row's id, its user, the message."""
    return f"""id {t.identity},
        user_id {t.id} NOT NULL,
        message_id {t.id} NOT NULL REFERENCES messages(id) ON DELETE CASCADE,"""


def core_tables(t: Types, unarchived: str, message_kind: str = "") -> str:
    """Users, topics, messages, facts and their history, and people: `unarchived` the
    index of the messages not yet in a topic, `message_kind` the messages' kind column
    where they have one from the start."""
    return conversation_tables(t, unarchived, message_kind) + memory_tables(t)


def conversation_tables(t: Types, unarchived: str, message_kind: str) -> str:
    """Users, topics and messages (see `core_tables`)."""
    return f"""
    CREATE TABLE users (
        user_id {t.id} PRIMARY KEY,
        current_segment INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL
    );
    CREATE TABLE topics (
        id {t.identity},
        user_id {t.id} NOT NULL,
        summary TEXT NOT NULL CHECK (length(trim(summary)) > 0),
        start_msg_id {t.id} NOT NULL,
        end_msg_id {t.id} NOT NULL,
        size_chars {t.id} NOT NULL,
        message_count INTEGER NOT NULL,
        first_message_at TEXT NOT NULL,
        last_message_at TEXT NOT NULL,
        facts_extracted INTEGER NOT NULL DEFAULT 0,
        consolidation_checked INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,{t.full_text("summary")}
        CHECK (start_msg_id <= end_msg_id)
    );
    CREATE INDEX topics_user ON topics(user_id, start_msg_id);
    CREATE TABLE messages (
        id {t.identity},
        user_id {t.id} NOT NULL,
        seq {t.id} NOT NULL,
        external_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        author TEXT,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        ts {t.real} NOT NULL,
        topic_id {t.id} REFERENCES topics(id) ON DELETE SET NULL,
        segment INTEGER NOT NULL DEFAULT 0,{message_kind}{t.full_text("content")}
        UNIQUE (user_id, seq),
        UNIQUE (user_id, external_id)
    );
    {unarchived}
    CREATE INDEX messages_topic ON messages(user_id, topic_id, seq);
    """


def memory_tables(t: Types) -> str:
    """Facts, their history, and people."""
    return f"""
    CREATE TABLE facts (
        id {t.identity},
        user_id {t.id} NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('identity', 'context', 'status')),
        content TEXT NOT NULL CHECK (length(trim(content)) > 0),
        importance INTEGER NOT NULL CHECK (importance BETWEEN 0 AND 100),
        topic_id {t.id},
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX facts_user ON facts(user_id);
    CREATE TABLE fact_history (
        id {t.identity},
        fact_id {t.id} NOT NULL,
        user_id {t.id} NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('add', 'update', 'delete')),
        old_content TEXT,
        new_content TEXT,
        old_importance INTEGER,
        new_importance INTEGER,
        reason TEXT,
        topic_id {t.id},
        at TEXT NOT NULL
    );
    CREATE INDEX fact_history_user ON fact_history(user_id, fact_id);
    CREATE TABLE people (
        id {t.identity},
        user_id {t.id} NOT NULL,
        name TEXT NOT NULL CHECK (length(trim(name)) > 0),
        aliases TEXT NOT NULL DEFAULT '[]',
        username TEXT,
        circle TEXT,
        bio TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX people_user ON people(user_id);
    """


def session_summaries(t: Types) -> str:
    return f"""
    CREATE TABLE session_summaries (
        user_id {t.id} NOT NULL,
        segment INTEGER NOT NULL,
        first_seq {t.id} NOT NULL,
        last_seq {t.id} NOT NULL,
        summary TEXT NOT NULL,
        written_by TEXT NOT NULL CHECK (written_by IN ('llm', 'extractive')),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (user_id, segment),
        CHECK (first_seq <= last_seq)
    );
    """


def vector_pending(t: Types, name: str = "vector_pending") -> str:
    """The queue of records whose vector is not (yet) in the vector index."""
    return f"""
    CREATE TABLE {name} (
        user_id {t.id} NOT NULL,
        kind TEXT NOT NULL
            CHECK (kind IN ('topics', 'facts', 'people', 'messages', 'passages')),
        record_id {t.id} NOT NULL,
        PRIMARY KEY (user_id, kind, record_id)
    );
    """


def answers(t: Types) -> str:
    return f"""
    CREATE TABLE answers (
        message_id {t.id} PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        user_id {t.id} NOT NULL,
        answered_by TEXT NOT NULL CHECK (answered_by IN ('responder', 'synthesis', 'memory')),
        partial INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
        context_used TEXT NOT NULL CHECK ({t.json_valid}),
        created_at TEXT NOT NULL
    );
    CREATE INDEX answers_user ON answers(user_id, message_id);
    """


def media_tables(t: Types) -> str:
    """A message's attachments and their passages, its edits, and the topics to summarise
    again since their messages changed."""
    return f"""
    CREATE TABLE attachments (
        {message_part(t)}
        name TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX attachments_message ON attachments(user_id, message_id);
    CREATE TABLE passages (
        id {t.identity},
        user_id {t.id} NOT NULL,
        attachment_id {t.id} NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
        message_id {t.id} NOT NULL,
        position INTEGER NOT NULL,
        content TEXT NOT NULL CHECK (length(trim(content)) > 0),{t.full_text("content")}
        UNIQUE (attachment_id, position)
    );
    CREATE INDEX passages_message ON passages(user_id, message_id);
    CREATE TABLE message_edits (
        {message_part(t)}
        old_content TEXT NOT NULL,
        new_content TEXT NOT NULL,
        at TEXT NOT NULL
    );
    CREATE INDEX message_edits_message ON message_edits(user_id, message_id);
    CREATE TABLE stale_topics (
        user_id {t.id} NOT NULL,
        topic_id {t.id} NOT NULL REFERENCES topics(id) ON DELETE CASCADE,
        PRIMARY KEY (user_id, topic_id)
    );
    """


VECTOR_INDEX = """
    CREATE TABLE vector_index (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """


def deliveries(t: Types) -> str:
    """Which answers reached the user; every answer already stored counts as delivered."""
    return f"""
    CREATE TABLE deliveries (
        message_id {t.id} PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
        user_id {t.id} NOT NULL,
        delivered_at TEXT NOT NULL
    );
    INSERT INTO deliveries (message_id, user_id, delivered_at)
        SELECT id, user_id, created_at FROM messages WHERE role = 'assistant';
    """


def task_tables(t: Types) -> str:
    """Scheduled tasks, their runs and each user's time zone."""
    return f"""
    ALTER TABLE users ADD COLUMN timezone TEXT;
    CREATE TABLE tasks (
        id {t.identity},
        user_id {t.id} NOT NULL,
        request TEXT NOT NULL,
        rule TEXT,
        timezone TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'done', 'cancelled')),
        next_run_at TEXT,
        created_at TEXT NOT NULL,
        claimed_by TEXT,
        claimed_until TEXT
    );
    CREATE INDEX tasks_user ON tasks(user_id, id);
    CREATE INDEX tasks_due ON tasks(next_run_at) WHERE state = 'active';
    CREATE TABLE task_runs (
        id {t.identity},
        task_id {t.id} NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        user_id {t.id} NOT NULL,
        due_at TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        output TEXT NOT NULL,
        tools_called TEXT NOT NULL DEFAULT '[]',
        fallback_reason TEXT,
        late INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX task_runs_task ON task_runs(user_id, task_id, id);
    """


def conversation_titles(t: Types) -> str:
    return f"""
    CREATE TABLE conversation_titles (
        user_id {t.id} NOT NULL,
        conversation TEXT NOT NULL,
        title TEXT NOT NULL,
        PRIMARY KEY (user_id, conversation)
    );
    """


def reminder_offers(t: Types) -> str:
    """Reminders offered for a commitment the Archivist found: the user's message it was
    said in (the offer goes with it), the request, the time as said and as read (`due_at`,
    UTC; `rule` when it repeats), and whether it was sent and answered."""
    return f"""
    CREATE TABLE reminder_offers (
        {message_part(t)}
        request TEXT NOT NULL CHECK (length(trim(request)) > 0),
        said_when TEXT NOT NULL,
        due_at TEXT NOT NULL,
        rule TEXT,
        timezone TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'offered'
            CHECK (state IN ('offered', 'accepted', 'dismissed')),
        sent_at TEXT,
        task_id {t.id},
        created_at TEXT NOT NULL,
        UNIQUE (user_id, message_id, request)
    );
    CREATE INDEX reminder_offers_user ON reminder_offers(user_id, id);
    CREATE INDEX reminder_offers_unsent ON reminder_offers(due_at) WHERE sent_at IS NULL;
    """
