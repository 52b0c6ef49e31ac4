"""One memory run per user at a time, across processes: an `fcntl` lock file per user.

Two `topica ingest` runs for one user (or an ingest beside the bot's memory worker)
would otherwise archive the same chunks and merge the same topics at once. The lock
is a file under the data directory (`locks/memory-u{user}.lock`) held with `flock`,
which the kernel releases when its holder dies, so a run killed with SIGKILL never
leaves a stale lock. Waiting polls without blocking a thread, so a waiting run can
be cancelled. On PostgreSQL (replicas on several machines) `ClaimRunLock` implements
the same port with claim rows and leases in the shared database.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import socket
import threading
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.logs import user_key
from stores.relational.database import Database

if TYPE_CHECKING:
    from stores.relational.postgres import PostgresDatabase

log = logging.getLogger(__name__)

POLL_S = 0.05


class FileRunLock:
    """`core.ports.MemoryRunLock` over lock files in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, user_id: int) -> Path:
        return self.directory / f"memory-u{int(user_id)}.lock"

    @asynccontextmanager
    async def hold(self, user_id: int) -> AsyncIterator[None]:
        """Wait until no other run (of any process) holds the user's lock, then hold it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path(user_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            waited = False
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waited:
                        log.info("user %s: waiting for another memory run", user_key(user_id))
                        waited = True
                    await asyncio.sleep(POLL_S)
            yield
        finally:
            os.close(descriptor)  # releases the lock


class ClaimRunLock:
    """`core.ports.MemoryRunLock` over the shared PostgreSQL database: a claim row per user
    (`memory_claims`), taken with `FOR UPDATE SKIP LOCKED` and held for a lease that the
    holder renews while it works. Two replicas never archive one user at once; a replica
    that died (SIGKILL, a lost machine) stops renewing and its claim expires after
    `lease_s`, when another replica takes it."""

    def __init__(self, db: Database, lease_s: float = 60.0) -> None:
        self._db = db
        self.lease_s = lease_s

    def claim(self, user_id: int, owner: str) -> bool:
        """Take or renew the user's claim for `owner`; False while another holds it."""
        with self._db.transaction() as db:
            db.execute(
                "INSERT INTO memory_claims (user_id, owner, expires_at) "
                "VALUES (?, '', now() - interval '1 second') ON CONFLICT DO NOTHING",
                (user_id,),
            )
            row = db.execute(
                "SELECT owner, expires_at > now() AS live FROM memory_claims "
                "WHERE user_id = ? FOR UPDATE SKIP LOCKED",
                (user_id,),
            ).fetchone()
            if row is None or (row["live"] and row["owner"] != owner):
                return False
            db.execute(
                "UPDATE memory_claims SET owner = ?, "
                "expires_at = now() + make_interval(secs => ?) WHERE user_id = ?",
                (owner, self.lease_s, user_id),
            )
            return True

    def release(self, user_id: int, owner: str) -> None:
        with self._db.transaction() as db:
            db.execute(
                "DELETE FROM memory_claims WHERE user_id = ? AND owner = ?", (user_id, owner)
            )

    def holder(self, user_id: int) -> str | None:
        """The owner of the user's live claim, if any (for logs and tests)."""
        rows = self._db.rows(
            "SELECT owner FROM memory_claims WHERE user_id = ? AND expires_at > now()",
            (user_id,),
        )
        return rows[0]["owner"] if rows else None

    @asynccontextmanager
    async def hold(self, user_id: int) -> AsyncIterator[None]:
        """Wait until the user's claim is free (or expired), then hold it, renewed every
        third of the lease, until the run ends."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        waited = False
        while not await asyncio.to_thread(self.claim, user_id, owner):
            if not waited:
                log.info("user %s: waiting for another replica's memory run", user_key(user_id))
                waited = True
            await asyncio.sleep(min(1.0, self.lease_s / 10))
        renewing = asyncio.create_task(self._renew(user_id, owner))
        try:
            yield
        finally:
            renewing.cancel()
            await asyncio.to_thread(self.release, user_id, owner)

    async def _renew(self, user_id: int, owner: str) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            if not await asyncio.to_thread(self.claim, user_id, owner):
                log.warning("user %s: memory claim lost to another replica", user_key(user_id))
                return


class AdvisoryChatLock:
    """`core.ports.ChatTurnLock` for replicas: a PostgreSQL session advisory lock per chat
    (keyed by the schema and the chat id). Every chat's lock of this process is held on
    one connection of its own, outside the pool (a turn holds its chat's lock while its
    queries use pooled connections, so holding a pooled connection per waiting chat would
    starve the pool). The server releases the locks when that connection dies, so a killed
    replica never blocks a chat. Waiting polls `pg_try_advisory_lock` (a waiting turn can
    be cancelled); chats of this process also wait for each other in process, since a
    session's advisory locks are re-entrant."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._connection: Any = None
        self._guard = threading.Lock()
        self._local: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    def _call(self, sql: str, key: str) -> bool:
        with self._guard:
            if self._connection is None or self._connection.closed:
                self._connection = self._db.connect()
            return bool(self._connection.execute(sql, (key,)).fetchone()[0])

    @asynccontextmanager
    async def hold(self, chat_id: int) -> AsyncIterator[None]:
        key = f"{self._db.schema}:chat:{int(chat_id)}"
        async with self._local[key]:
            while True:
                if await asyncio.to_thread(self._call, TRY_LOCK, key):
                    break
                await asyncio.sleep(POLL_S)  # another replica's turn of this chat: poll
            try:
                yield
            finally:
                await asyncio.to_thread(self._call, UNLOCK, key)

    def close(self) -> None:
        with self._guard:
            if self._connection is not None:
                self._connection.close()


TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
