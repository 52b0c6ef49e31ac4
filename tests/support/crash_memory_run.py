"""Start a memory-graph run and die by SIGKILL right after one node's checkpoint.

Usage: python -m tests.support.crash_memory_run DATA_DIR SESSION_FILE NODE

The durability test runs this in a subprocess, then resumes in-process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from app.memory import memory_thread
from core.context import MemoryContext
from core.settings import Settings
from graphs.memory import build_memory_graph
from stores.checkpoints import durable_checkpointer
from stores.saved_sessions import read_session
from stores.services import build_deps

USER_ID = 1


async def main(data_dir: Path, session: Path, kill_after: str) -> None:
    deps = build_deps(Settings(data_dir=data_dir))
    deps.indexer.store_messages(USER_ID, read_session(session))
    context = MemoryContext.from_settings(deps.settings, user_id=USER_ID, archive_all=True)
    async with durable_checkpointer(deps.settings) as checkpointer:
        graph = build_memory_graph(deps).compile(checkpointer=checkpointer)
        async for update in graph.astream(
            {},
            memory_thread(USER_ID),
            context=context,
            stream_mode="updates",
            durability="sync",
        ):
            if kill_after in update:
                os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(f"node {kill_after!r} never ran")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
