"""Another connection holding SQLite's write lock, for the lock tests."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path, seconds: float) -> Iterator[threading.Event]:
    """Another connection holds an exclusive write lock for `seconds`."""
    taken = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        taken.set()
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(5)
    try:
        yield taken
    finally:
        holder.join()


def hold_lock(path: Path, seconds: float) -> None:
    """Take the lock, hold it for `seconds`, then let it go (in a worker thread)."""
    with locked(path, seconds):
        pass
