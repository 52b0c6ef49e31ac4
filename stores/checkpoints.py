"""The durable LangGraph checkpointer of the CLI and the bot."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from core.settings import Settings


def durable_checkpointer(settings: Settings) -> AbstractAsyncContextManager[AsyncSqliteSaver]:
    """The SQLite checkpointer the CLI and the bot compile their graphs with.

    Runs are resumable from their last completed step after a crash;
    `langgraph dev` keeps its own and gets graphs compiled without one.
    """
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return AsyncSqliteSaver.from_conn_string(str(settings.checkpoints_path))
