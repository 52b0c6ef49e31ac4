"""The base of the bot's Bot API session middlewares: one method sees each request.

aiogram calls a session middleware with the next handler, the bot and the method; a
`RequestMiddleware` gets the method and `send`, which makes the request through the
middlewares after it, so each middleware states only what it does around the call.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.methods.base import TelegramType

if TYPE_CHECKING:
    from aiogram import Bot
    from aiogram.methods import Response, TelegramMethod

    Send = Callable[[], Awaitable[Response[TelegramType]]]
    """Makes the request, through the middlewares after this one."""


class RequestMiddleware(BaseRequestMiddleware):
    """A session middleware whose `request` receives each Bot API method and `send`."""

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        return await self.request(method, lambda: make_request(bot, method))

    @abstractmethod
    async def request(
        self, method: TelegramMethod[TelegramType], send: Send[TelegramType]
    ) -> Response[TelegramType]:
        """The response to `method`: `await send()`, with what the middleware adds."""
