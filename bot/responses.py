"""Each Bot API method's response model is built once per process.

aiogram validates every answer from the Bot API as `Response[T]`, `T` the method's
result type, a pydantic generic model parametrised on each call. Pydantic keeps the
parametrised classes in a cache of weak references, and a class is only freed by the
cyclic garbage collector, so after each full collection the next call built
`Response[Message]` again: its schema, from scratch, with the GIL held.
`KeepResponseModels` holds a strong reference to each method's model from its first call
on; there are as many as methods used (a few dozen at most).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiogram.methods import Response, TelegramMethod
from aiogram.methods.base import TelegramType

from bot.request_middleware import RequestMiddleware

if TYPE_CHECKING:
    from bot.request_middleware import Send


class KeepResponseModels(RequestMiddleware):
    """A session middleware that keeps `Response[T]` alive for each method it sees."""

    def __init__(self) -> None:
        self.kept: dict[type[TelegramMethod[Any]], type[Response[Any]]] = {}

    async def request(
        self, method: TelegramMethod[TelegramType], send: Send[TelegramType]
    ) -> Response[TelegramType]:
        if type(method) not in self.kept:
            self.kept[type(method)] = Response[method.__returning__]  # type: ignore[name-defined]
        return await send()
