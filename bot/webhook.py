"""Answers that ride back on the webhook's response.

Telegram runs a method the bot writes into its response to a webhook request (the
Bot API's "making requests when getting updates"), and redelivers the update when that
response fails. Sending the answer this way makes Telegram's acknowledgement of the update
and the answer's sending one event: a replica killed before its response is complete
leaves no answer behind, Telegram delivers the question again, and the stored answer is
sent then (a `resend`, `app.inbox.Inbox.receive`); one killed after it has nothing left
to do. With a separate `sendMessage` call there is always a moment (the call sent, its
confirmation not yet recorded) where a kill makes the answer go out twice.

Only one method fits in a response, so only an answer that is one message goes this way;
a longer one, and every answer in polling mode, is sent with calls as before.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Bot
from aiogram.methods import TelegramMethod
from aiogram.webhook.aiohttp_server import SimpleRequestHandler
from aiohttp import web

log = logging.getLogger(__name__)

OnSent = Callable[[], Awaitable[None]]


class WebhookReply:
    """The response slot of one webhook request: open while its update is handled.

    A handler `offer`s the method it would otherwise call; the slot takes it while the
    request is still waiting for its response (aiogram answers a request after 55 s and
    goes on in the background; an offer after that is refused and the caller sends)."""

    def __init__(self) -> None:
        self._open = True
        self.method: TelegramMethod[Any] | None = None
        self._on_sent: OnSent | None = None

    def offer(self, method: TelegramMethod[Any], on_sent: OnSent) -> bool:
        """Take `method` for the response; `on_sent` runs once the response is written."""
        if not self._open or self.method is not None:
            return False
        self.method, self._on_sent = method, on_sent
        return True

    def close(self) -> TelegramMethod[Any] | None:
        self._open = False
        return self.method

    async def sent(self) -> None:
        if self._on_sent is not None:
            await self._on_sent()


class ReplyingRequestHandler(SimpleRequestHandler):
    """aiogram's webhook handler, with a `webhook_reply` slot in every update's data:
    the method offered there is the response, and its `on_sent` runs once the response
    is written in full (so a kill before that leaves it unrecorded, and resent)."""

    async def _handle_request(self, bot: Bot, request: web.Request) -> web.Response:
        reply = WebhookReply()
        try:
            await self.dispatcher.feed_webhook_update(
                bot,
                await request.json(loads=bot.session.json_loads),
                webhook_reply=reply,
                **self.data,
            )
        finally:
            method = reply.close()
        response = web.Response(body=self._build_response_writer(bot=bot, result=method))
        if method is None:
            return response
        await response.prepare(request)
        await response.write_eof()
        try:
            await reply.sent()
        except Exception:
            log.exception("the answer went out in the webhook's response; not recorded")
        return response
