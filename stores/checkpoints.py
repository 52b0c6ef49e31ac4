"""The durable LangGraph checkpointer of the CLI and the bot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver

from core.settings import Settings

SETUP_LOCK = 0x70_71_CA_01
"""Advisory lock key held while the PostgreSQL checkpointer sets its tables up, so
replicas starting at once do not race on its migrations."""


@asynccontextmanager
async def durable_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver]:
    """The checkpointer the CLI and the bot compile their graphs with: SQLite in the data
    dir, or PostgreSQL (`langgraph-checkpoint-postgres`) in the store's database and
    schema when `TOPICA_DATABASE_URL` is set, so a run killed on one replica resumes on
    another.

    Runs are resumable from their last completed step after a crash;
    `langgraph dev` keeps its own and gets graphs compiled without one.
    """
    if settings.database_url is None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoints_path)) as saver:
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.conninfo import make_conninfo

    url = make_conninfo(
        settings.database_url.get_secret_value(),
        options=f"-c search_path={settings.database_schema},public",
    )
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        async with await AsyncConnection.connect(url, autocommit=True) as lock:
            await lock.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
            try:
                await saver.setup()
            finally:
                await lock.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
        yield saver
