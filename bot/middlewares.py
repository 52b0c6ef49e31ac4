"""The bot's cross-cutting concerns, each a middleware.

Outer on every update, in order: `bot.tracking.InFlightMiddleware`, `AllowlistMiddleware`,
`LanguageMiddleware`; outer on messages `StoreIncomingMiddleware` (the `Inbox` first);
inner on the conversation handler `GroupingMiddleware`, then aiogram's
`ChatActionMiddleware`. None suspends before the `Inbox` takes its chat's lock, and
aiogram starts update tasks in update order, so a chat's messages are stored in order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import Message, TelegramObject, Update, User

from app.inbox import Inbox
from bot.grouping import MessageGrouper
from bot.media import describe
from bot.sending import deliver_answer
from bot.texts import texts_for
from bot.updates import external_id, is_conversation, is_said, sender_id
from core.records import MessageRow, NewMessage
from core.tracing import user_key

log = logging.getLogger(__name__)

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


class AllowlistMiddleware(BaseMiddleware):
    """Only users on the allowlist reach the bot; an empty list lets nobody in."""

    def __init__(self, allowed_user_ids: list[int]) -> None:
        self.allowed = frozenset(allowed_user_ids)

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user_id = sender_id(data)
        if user_id is None or user_id not in self.allowed:
            update_id = event.update_id if isinstance(event, Update) else None
            user = user_key(user_id) if user_id is not None else None
            log.info("ignored update %s from user %s (not on the allowlist)", update_id, user)
            return None
        return await handler(event, data)


class LanguageMiddleware(BaseMiddleware):
    """`texts`: the user's language, from Telegram's language_code."""

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user: User | None = data.get("event_from_user")
        data["texts"] = texts_for(user.language_code if user else None)
        return await handler(event, data)


class StoreIncomingMiddleware(BaseMiddleware):
    """Every conversation message goes through `Inbox.receive` first; only a `stored` one
    goes on (with its `row`). Commands are control and not stored; a group chat's messages
    only with `group_memory` (into the sender's own memory, never answered there). From
    arrival until it joins a group the message is a pending `Arrival` of its chat."""

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        private = is_conversation(event)
        if not private and not (is_said(event) and data["settings"].group_memory):
            return await handler(event, data)
        message = NewMessage(
            external_id=external_id(event),
            role="user",
            content=describe(event, data["texts"]),
            created_at=event.date.astimezone(UTC).isoformat(),
            author=event.from_user.full_name,
        )

        async def resend(answer: MessageRow, on_sent: Callable[[], Awaitable[None]]) -> None:
            await deliver_answer(
                data["bot"], event.chat.id, answer["content"], reply_to=event.message_id,
                reply=data.get("webhook_reply"), on_sent=on_sent,
            )  # fmt: skip

        arrival = data["grouper"].arrival(event.chat.id)
        try:
            inbox: Inbox = data["inbox"]
            receipt = await inbox.receive(
                event.chat.id, event.from_user.id, message, private=private, resend=resend
            )
            if receipt.outcome == "stored":
                return await handler(event, {**data, "arrival": arrival, "row": receipt.row})
        finally:
            arrival.settle()


class GroupingMiddleware(BaseMiddleware):
    """Quick messages become one group: only the group's opener calls the handler, with
    the group's last message as the event (the answer replies to it), the whole group as
    `group`, their stored `rows` and what other replicas received (`elsewhere`), under
    the chat's turn lock."""

    def __init__(self) -> None:
        self._rows: dict[str, MessageRow] = {}

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, Message):
            return await handler(event, data)
        self._rows[external_id(event)] = data["row"]
        grouper: MessageGrouper = data["grouper"]
        group = await grouper.collect(event.chat.id, event, data.get("arrival"))
        if group is None:
            return None
        rows = [self._rows.pop(external_id(message)) for message in group]
        inbox: Inbox = data["inbox"]
        async with grouper.turn_lock(event.chat.id), inbox.replicas(event.chat.id):
            mine = {row["external_id"] for row in rows}
            elsewhere = await inbox.stored_elsewhere(event.chat.id, event.from_user.id, mine)
            if elsewhere is None:
                return None
            turn_data = {**data, "group": group, "rows": rows, "elsewhere": elsewhere}
            return await handler(group[-1], turn_data)
