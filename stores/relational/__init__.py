"""The relational store: messages, topics, facts (with history) and people in SQLite.

One repository per entity over one shared connection (`Database`): `sessions` (users,
segments, rolling summaries), `messages` (with their edits), `topics`, `facts`, `people`,
`answers` (what each answer was made from), `attachments` (documents kept as memory, in
passages), the `vector_queue` of records the vector index still lacks, `tasks`
(scheduled tasks, their runs, each user's time zone) and `offers` (reminders offered for
the user's commitments). Every public
method takes the user id and every statement filters on it: one user's call can never
read or change another user's rows. `atomic()` makes calls on several repositories one
transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

from stores.relational.answers import AnswerRepository
from stores.relational.attachments import AttachmentRepository
from stores.relational.database import Database, SqliteDatabase
from stores.relational.facts import FactRepository
from stores.relational.messages import MessageRepository
from stores.relational.offers import OfferRepository
from stores.relational.people import PeopleRepository
from stores.relational.sessions import SessionRepository
from stores.relational.tasks import TaskRepository
from stores.relational.topics import TopicRepository
from stores.relational.vector_queue import VectorQueue

if TYPE_CHECKING:
    from core.ports import VectorKind


class RelationalStore:
    """Persistence for one Topica installation (all users, strictly separated): a SQLite
    file (a path) or any `Database` engine (PostgreSQL for replicas)."""

    def __init__(self, db: Database | Path | str, busy_timeout_s: float = 10.0) -> None:
        self.db = db if isinstance(db, Database) else SqliteDatabase(db, busy_timeout_s)
        self.sessions = SessionRepository(self.db)
        self.messages = MessageRepository(self.db)
        self.topics = TopicRepository(self.db)
        self.facts = FactRepository(self.db)
        self.people = PeopleRepository(self.db)
        self.answers = AnswerRepository(self.db)
        self.attachments = AttachmentRepository(self.db)
        self.vector_queue = VectorQueue(self.db)
        self.tasks = TaskRepository(self.db)
        self.offers = OfferRepository(self.db)

    @property
    def path(self) -> str:
        return self.db.path

    @property
    def schema_version(self) -> int:
        return self.db.schema_version

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Make several repository calls one transaction: all of them happen, or none."""
        with self.db.transaction():
            yield

    def holding(self, user_id: int, kinds: Sequence[VectorKind]) -> set[VectorKind]:
        """Those of the vector `kinds` the user has records of. Each kind's records are the
        rows of its own table, and the vector index holds nothing a row does not."""
        return cast("set[VectorKind]", self.db.holding(user_id, kinds))

    def ping(self) -> None:
        """Raises unless the database answers a query."""
        self.db.rows("SELECT 1")

    def close(self) -> None:
        self.db.close()
