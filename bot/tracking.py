"""The tasks the bot is running, so shutdown can let them finish."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update


class TaskTracker:
    """The tasks handling updates right now, so shutdown can let them finish."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self.last_update_id: int | None = None
        """The newest update seen: polling confirms it to Telegram at shutdown."""

    def add(self, task: asyncio.Task[Any], update_id: int) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.last_update_id = max(update_id, self.last_update_id or update_id)

    def track(self, task: asyncio.Task[Any]) -> None:
        """A task of the bot's own (not an update's) that shutdown waits for too."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def wait(self, grace_s: float) -> int:
        """Wait up to `grace_s` for the tracked tasks; cancel and count those still running."""
        current = asyncio.current_task()
        pending = {task for task in self._tasks if task is not current}
        if not pending:
            return 0
        _, late = await asyncio.wait(pending, timeout=grace_s)
        for task in late:
            task.cancel()
        return len(late)


class InFlightMiddleware(BaseMiddleware):
    """Tracks the task handling each update (outermost, on every update)."""

    def __init__(self, tracker: TaskTracker) -> None:
        self.tracker = tracker

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        task = asyncio.current_task()
        if task is not None and isinstance(event, Update):
            self.tracker.add(task, event.update_id)
        return await handler(event, data)
