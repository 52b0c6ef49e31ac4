"""Bounded retries for Telegram calls: flood control waits, transient errors back off.

Seed 002: exponential backoff of 0.5, 1 and 2 seconds on Telegram API errors.
A 429 waits the `retry_after` Telegram asks for (up to a cap). Requests are
retried by a session middleware, so every Bot API call the bot makes is
covered, except `getUpdates`, whose polling loop in aiogram has its own backoff,
and `sendMessageDraft`: a draft is a passing preview that the next draft replaces,
so a failed one is dropped (and ends that answer's drafts), never waited for.
File downloads do not pass through that middleware and use `with_backoff`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import aiohttp
from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError
from aiogram.methods import GetUpdates, Response, SendMessageDraft, TelegramMethod
from aiogram.methods.base import TelegramType

from bot.request_middleware import RequestMiddleware

if TYPE_CHECKING:
    from bot.request_middleware import Send

log = logging.getLogger(__name__)

T = TypeVar("T")

BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0)
MAX_RETRY_AFTER_S = 60.0
TRANSIENT = (TelegramNetworkError, TelegramServerError, aiohttp.ClientError, TimeoutError)


async def with_backoff(
    call: Callable[[], Awaitable[T]],
    *,
    what: str,
    delays: Sequence[float] = BACKOFF_S,
    max_retry_after_s: float = MAX_RETRY_AFTER_S,
) -> T:
    """`call()`, retried once per delay on flood control and transient errors."""
    for attempt in range(len(delays) + 1):
        try:
            return await call()
        except TelegramRetryAfter as error:
            if attempt == len(delays) or error.retry_after > max_retry_after_s:
                raise
            log.warning("%s: flood control, retrying in %s s", what, error.retry_after)
            await asyncio.sleep(error.retry_after)
        except TRANSIENT as error:
            if attempt == len(delays):
                raise
            log.warning(
                "%s failed (%s: %s), retrying in %s s",
                what,
                type(error).__name__,
                error,
                delays[attempt],
            )
            await asyncio.sleep(delays[attempt])
    raise AssertionError("unreachable")


class RetryRequestMiddleware(RequestMiddleware):
    """Retries Bot API requests (all but getUpdates) with `with_backoff`."""

    def __init__(self, delays: Sequence[float] = BACKOFF_S) -> None:
        self.delays = tuple(delays)

    async def request(
        self, method: TelegramMethod[TelegramType], send: Send[TelegramType]
    ) -> Response[TelegramType]:
        if isinstance(method, GetUpdates | SendMessageDraft):
            return await send()
        name: Any = getattr(method, "__api_method__", type(method).__name__)
        return await with_backoff(send, what=str(name), delays=self.delays)
