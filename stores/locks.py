"""One memory run per user at a time, across processes: an `fcntl` lock file per user.

Two `topica ingest` runs for one user (or an ingest beside the bot's memory worker)
would otherwise archive the same chunks and merge the same topics at once. The lock
is a file under the data directory (`locks/memory-u{user}.lock`) held with `flock`,
which the kernel releases when its holder dies, so a run killed with SIGKILL never
leaves a stale lock. Waiting polls without blocking a thread, so a waiting run can
be cancelled. A PostgreSQL deployment would implement the same port with an
advisory lock.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from core.logs import user_key

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
