"""The bot's task scheduler: every `task_poll_s` it runs the due task runs
(`app.scheduling.run_due`) and sends each run's message to the user's private chat.

Each bot process claims runs under its own owner id, so replicas on one database never
send a run twice. A work run's message streams into a draft while the Tasker writes it
(`bot.drafts.drafts_for_run`, like a turn's), then is sent with the Sources button of its
stored answer (`bot.routers.sources`), like an answer. A message goes through `send_html`
(split under Telegram's limit, the Bot API session's retries and backoff included); a
delivery that fails is logged and its run retried once its claim expires, except one
Telegram refuses for good (the user blocked the bot, the chat is gone:
`refused_for_good`), which ends its run undelivered. Each pass then sends the new
reminder offers (`bot.offers`). A failing pass is logged and the loop goes on; `stop`
lets the pass under way finish within a timeout. The clock is injectable so a test can
move time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aiogram import Bot

from app.scheduling import Undeliverable, run_due
from app.turns import OnText
from bot.drafts import drafts_for_run
from bot.offers import send_offers
from bot.render import escape
from bot.routers.sources import sources_button
from bot.sending import refused_for_good, send_html
from bot.task_texts import task_texts_for, texts_for

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.tasks import TaskRow

Clock = Callable[[], datetime]

log = logging.getLogger(__name__)


def wall_clock() -> datetime:
    return datetime.now(UTC)


def owner_id() -> str:
    """This process's name in task claims: unique per process, readable in the database."""
    return f"bot:{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def run_message(task: TaskRow, text: str, late: bool) -> str:
    """A run's message as Telegram HTML: the reminder mark, the text, a late note."""
    words = task_texts_for(task["request"])
    message = words.reminder.format(text=escape(text))
    return message + (words.late if late else "")


class TaskScheduler:
    def __init__(self, deps: Deps, interval_s: float, clock: Clock = wall_clock) -> None:
        self.deps = deps
        self.interval_s = interval_s
        self.clock = clock
        self.owner = owner_id()
        self._loop: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self, bot: Bot) -> None:
        """Start the loop (once) sending through `bot`."""
        if self._loop is None:
            self._stopping = asyncio.Event()
            self._loop = asyncio.create_task(self._run_forever(bot), name="task-scheduler")

    async def stop(self, timeout_s: float = 0.0) -> None:
        """Stop the loop: no pass starts any more, the one under way gets `timeout_s` to
        deliver and record its runs, then is cancelled (a run cut off mid-send is retried
        after its claim)."""
        if self._loop is None:
            return
        self._stopping.set()
        done, _ = await asyncio.wait({self._loop}, timeout=timeout_s)
        if not done:
            log.warning("task scheduler pass still running after %.0f s: cancelled", timeout_s)
            self._loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._loop
        self._loop = None

    async def run_once(self, bot: Bot) -> int:
        """One pass: the due runs delivered (how many), then the new reminder offers."""

        async def deliver(
            user_id: int, task: TaskRow, text: str, late: bool, answer_id: int | None
        ) -> None:
            texts = texts_for(task["request"])
            buttons = sources_button(texts, answer_id) if answer_id is not None else None
            try:
                await send_html(bot, user_id, run_message(task, text, late), buttons=buttons)
            except Exception as error:
                if refused_for_good(error):
                    raise Undeliverable(str(error)) from error
                raise

        now = self.clock()

        @contextlib.asynccontextmanager
        async def streams(user_id: int, run_id: str) -> AsyncIterator[OnText | None]:
            settings, stops = self.deps.settings, self.deps.stops
            async with drafts_for_run(bot, settings, stops, user_id, run_id) as drafts:
                yield drafts.update if drafts else None

        delivered = await run_due(self.deps, self.owner, deliver, now=now, streams=streams)
        await send_offers(self.deps, bot, now)
        return delivered

    async def _run_forever(self, bot: Bot) -> None:
        while not self._stopping.is_set():
            try:
                await self.run_once(bot)
            except Exception:
                log.exception("task scheduler pass failed; next pass in %.1f s", self.interval_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.interval_s)
