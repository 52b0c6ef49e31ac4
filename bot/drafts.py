"""The answer in a Telegram draft while the model writes it (`sendMessageDraft`).

In a private chat, with `TOPICA_STREAMING` on, a turn's answer grows in a draft: the
first words as soon as they exist, then at most every `TOPICA_DRAFT_INTERVAL_S`, and only
when the text changed. Each draft is the Markdown so far rendered to Telegram HTML (the
converter closes what is still open, such as a code block); past Telegram's length limit
it shows the part being written. The draft carries Telegram's stop button: a press stops
the turn (`Deps.stops`) and what was written becomes the answer.

A scheduled task's run streams the same way into its user's private chat
(`drafts_for_run`): the Tasker's message grows in a draft, then is sent.

Drafts are a preview, never the answer: the answer is always sent after as an ordinary
message. So a draft Telegram refuses (an older Bot API server, a chat without drafts, an
error) only ends the drafts of that answer, and `close()` waits for a draft still in
flight, so none can land after the final message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import AsyncIterator

import aiohttp
from aiogram import Bot
from aiogram.enums import ChatType, ParseMode
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.types import Message

from bot.render import draft_html, html_to_plain
from bot.sending import is_parse_error
from bot.updates import external_id
from core.settings import Settings
from core.stops import GenerationStops

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 5.0
"""How long the final message waits for a draft still in flight."""

REFUSALS = (TelegramAPIError, aiohttp.ClientError, TimeoutError)


class DraftStream:
    """One answer shown in a draft of `chat_id` while it is written (see the module doc)."""

    def __init__(
        self,
        bot: Bot,
        chat_id: int,
        draft_id: int,
        *,
        interval_s: float,
        stop: asyncio.Event | None = None,
        can_stop: bool = True,
    ) -> None:
        self.bot = bot
        self.can_stop = can_stop
        self.chat_id = chat_id
        self.draft_id = draft_id
        self.interval_s = interval_s
        self.stop = stop or asyncio.Event()
        self.drafts_sent = 0
        self.refused = False
        self._text = ""
        self._shown = ""
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._sender = asyncio.create_task(self._send_drafts())

    def update(self, text: str) -> None:
        """The answer so far; shown in the next draft (never waits)."""
        self._text = text
        self._changed.set()

    async def close(self) -> None:
        """No more drafts; returns once a draft in flight is answered (or given up)."""
        self._closing.set()
        self._changed.set()
        try:
            await asyncio.wait_for(self._sender, CLOSE_TIMEOUT_S)
        except TimeoutError:
            log.warning("a draft to chat %s was still in flight; given up", self.chat_id)

    def _done(self) -> bool:
        return self._closing.is_set() or self.stop.is_set() or self.refused

    async def _send_drafts(self) -> None:
        loop = asyncio.get_running_loop()
        last_sent = -self.interval_s
        while not self._done():
            await self._changed.wait()
            wait = last_sent + self.interval_s - loop.time()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), wait)
            self._changed.clear()
            text = self._text
            html = draft_html(text) if text != self._shown else ""
            if self._done() or not html.strip():
                continue
            last_sent = loop.time()
            await self._send(html)
            self._shown = text

    async def _send(self, html: str) -> None:
        try:
            try:
                await self._draft(html, ParseMode.HTML)
            except TelegramBadRequest as error:
                if not is_parse_error(error):
                    raise
                await self._draft(html_to_plain(html), None)
        except REFUSALS as error:
            log.info("chat %s: draft refused (%s); the answer comes whole", self.chat_id, error)
            self.refused = True
            return
        self.drafts_sent += 1

    async def _draft(self, text: str, parse_mode: ParseMode | None) -> None:
        await self.bot.send_message_draft(
            chat_id=self.chat_id,
            draft_id=self.draft_id,
            text=text,
            parse_mode=parse_mode,
            can_stop=self.can_stop,
            keep_on_stop=True,
        )


@contextlib.asynccontextmanager
async def open_drafts(
    bot: Bot,
    settings: Settings,
    stops: GenerationStops,
    chat_id: int,
    draft_id: int,
    key: str,
    *,
    can_stop: bool = True,
) -> AsyncIterator[DraftStream]:
    """Drafts of `chat_id` for what is open under `key` in `stops` while the block runs
    (their stop button, if `can_stop`, stops it); they close when it ends."""
    with stops.open(key) as stop:
        drafts = DraftStream(
            bot,
            chat_id,
            draft_id,
            interval_s=settings.draft_interval_s,
            stop=stop,
            can_stop=can_stop,
        )
        try:
            yield drafts
        finally:
            await drafts.close()


@contextlib.asynccontextmanager
async def drafts_for(
    bot: Bot, message: Message, settings: Settings, stops: GenerationStops
) -> AsyncIterator[DraftStream | None]:
    """Drafts for the turn answering `message`, in a private chat with streaming on (else
    None); the turn can be stopped while the block runs; the drafts close when it ends."""
    if not settings.streaming or message.chat.type != ChatType.PRIVATE:
        yield None
        return
    chat_id, draft_id = message.chat.id, message.message_id
    async with open_drafts(bot, settings, stops, chat_id, draft_id, external_id(message)) as drafts:
        yield drafts


@contextlib.asynccontextmanager
async def drafts_for_run(
    bot: Bot, settings: Settings, stops: GenerationStops, chat_id: int, run_id: str
) -> AsyncIterator[DraftStream | None]:
    """Drafts for a task run's message in the user's private chat `chat_id` with
    streaming on (else None), the run open under its id in `stops` (so the Tasker reads
    its reply as a stream). Nobody asked for the run, so its drafts have no stop button."""
    if not settings.streaming:
        yield None
        return
    draft_id = zlib.crc32(run_id.encode()) or 1
    async with open_drafts(
        bot, settings, stops, chat_id, draft_id, run_id, can_stop=False
    ) as drafts:
        yield drafts
