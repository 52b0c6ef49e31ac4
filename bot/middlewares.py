"""The bot's cross-cutting concerns, each a middleware.

Outer, on every update, in this order: `InFlightMiddleware` (shutdown waits
for the update's task), `AllowlistMiddleware` (others are logged and dropped),
`LanguageMiddleware` (the user's texts). Outer on messages:
`StoreIncomingMiddleware` stores each conversation message before any filter or
handler runs. Inner on the conversation handler: `GroupingMiddleware` (debounce
and one turn at a time per chat), then aiogram's `ChatActionMiddleware`
(typing while the turn runs).

None of these suspends before `StoreIncomingMiddleware` takes its chat's lock in the
`Inbox` (edits take the same lock),
and aiogram starts update tasks in update order, so a chat's messages are
stored in the order Telegram numbered them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC
from typing import Any

from aiogram import BaseMiddleware, Bot
from aiogram.enums import ChatType, ContentType
from aiogram.types import Chat, Message, TelegramObject, Update, User

from app.inbox import Inbox, chat_prefix, stored_id
from bot.grouping import MessageGrouper
from bot.media import describe
from bot.sending import deliver_answer
from bot.texts import Texts, texts_for
from bot.webhook import WebhookReply
from core.deps import Deps
from core.records import MessageRow, NewMessage
from core.tracing import user_key

log = logging.getLogger(__name__)

Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


def external_id(message: Message) -> str:
    """The stored id of a Telegram message (`app.inbox.stored_id`)."""
    return stored_id(message.chat.id, message.message_id)


class SeenMessages:
    """Stored ids of the messages this process has handed to a turn (the newest
    `capacity`): a redelivery of one of them is a duplicate, whatever its turn's outcome.
    A message stored by an earlier process and never answered is not among them, so its
    redelivery is answered (`StoreIncomingMiddleware`), as is the start-up pickup."""

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def add(self, stored: str) -> None:
        self._ids[stored] = None
        self._ids.move_to_end(stored)
        while len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

    def __contains__(self, stored: object) -> bool:
        return stored in self._ids


def is_command(message: Message) -> bool:
    return bool(message.text and message.text.startswith("/"))


CONVERSATION_CONTENT = frozenset(
    {
        ContentType.TEXT,
        ContentType.PHOTO,
        ContentType.VOICE,
        ContentType.AUDIO,
        ContentType.DOCUMENT,
        ContentType.STICKER,
        ContentType.VIDEO,
        ContentType.VIDEO_NOTE,
        ContentType.ANIMATION,
    }
)
"""What a user says or sends; service messages, polls, locations and the like are not stored."""


def is_said(event: TelegramObject) -> bool:
    """A user's non-command message with conversation content, in any chat."""
    return (
        isinstance(event, Message)
        and event.from_user is not None
        and event.content_type in CONVERSATION_CONTENT
        and not is_command(event)
    )


def is_conversation(event: TelegramObject) -> bool:
    """A message the bot answers with a turn: a user's non-command message in a private chat."""
    return is_said(event) and event.chat.type == ChatType.PRIVATE


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
    def __init__(self, tracker: TaskTracker) -> None:
        self.tracker = tracker

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        task = asyncio.current_task()
        if task is not None and isinstance(event, Update):
            self.tracker.add(task, event.update_id)
        return await handler(event, data)


def sender_id(data: dict[str, Any]) -> int | None:
    """Who an update comes from: its user, or for an update that names only a chat (the
    stop button of a draft) the user of that private chat, whose id is the chat's."""
    user: User | None = data.get("event_from_user")
    if user is not None:
        return user.id
    chat: Chat | None = data.get("event_chat")
    return chat.id if chat is not None and chat.type == ChatType.PRIVATE else None


class AllowlistMiddleware(BaseMiddleware):
    """Only users on the allowlist reach the bot; an empty list lets nobody in."""

    def __init__(self, allowed_user_ids: list[int]) -> None:
        self.allowed = frozenset(allowed_user_ids)

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user_id = sender_id(data)
        if user_id is None or user_id not in self.allowed:
            update_id = event.update_id if isinstance(event, Update) else None
            log.info(
                "ignored update %s from user %s (not on the allowlist)",
                update_id,
                user_key(user_id) if user_id is not None else None,
            )
            return None
        return await handler(event, data)


class LanguageMiddleware(BaseMiddleware):
    """`texts`: the user's language, from Telegram's language_code."""

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user: User | None = data.get("event_from_user")
        data["texts"] = texts_for(user.language_code if user else None)
        return await handler(event, data)


class StoreIncomingMiddleware(BaseMiddleware):
    """Every conversation message is stored first; a redelivered one goes no further.

    A message already stored is a redelivery: it goes on to be answered only if it was
    stored by an earlier run of the bot and never answered (the turn crashed with the
    process); otherwise it is dropped, so nothing is answered twice.
    Commands are control, not conversation, and are not stored. Group chats are not
    stored either, unless `group_memory` is on: then an allowed user's group message goes
    into their own memory (and is never answered there, `bot.routers.groups`). A message
    already stored (Telegram redelivers updates that were processed but not
    yet confirmed when the bot stopped) is dropped, so it is not answered twice.
    From arrival until it joins a group the message is a pending `Arrival` of
    its chat, so the chat's open group waits for it.
    """

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        private = is_conversation(event)
        if not private and not (is_said(event) and data["settings"].group_memory):
            return await handler(event, data)
        deps: Deps = data["deps"]
        texts: Texts = data["texts"]
        message = NewMessage(
            external_id=external_id(event),
            role="user",
            content=describe(event, texts),
            created_at=event.date.astimezone(UTC).isoformat(),
            author=event.from_user.full_name,
        )
        grouper: MessageGrouper = data["grouper"]
        arrival = grouper.arrival(event.chat.id)
        try:
            inbox: Inbox = data["inbox"]
            stored = await inbox.store(event.chat.id, event.from_user.id, message)
            seen: SeenMessages = data["seen"]
            if (
                not stored
                and private
                and await self._send_stored_answer(
                    deps, event, data["bot"], data.get("webhook_reply")
                )
            ):
                return None
            if not stored and not (private and await self._unanswered_elsewhere(deps, event, seen)):
                log.info(
                    "message %s is already stored: a redelivery, skipped", message["external_id"]
                )
                return None
            if not stored:
                log.warning(
                    "message %s was stored but never answered (the bot stopped mid-turn): "
                    "answering it now",
                    message["external_id"],
                )
            if not private:
                return await handler(event, data)
            seen.add(message["external_id"])
            return await handler(event, {**data, "arrival": arrival})
        finally:
            arrival.settle()

    @staticmethod
    async def _send_stored_answer(
        deps: Deps, event: Message, bot: Bot, reply: WebhookReply | None
    ) -> bool:
        """A redelivered question whose answer was stored but never sent (its process died
        in between): the stored answer is sent now, once (under the chat's lock where
        replicas share the chat), in the webhook's `reply` where it fits one message."""
        async with AsyncExitStack() as replicas:
            if deps.chat_lock is not None:
                await replicas.enter_async_context(deps.chat_lock.hold(event.chat.id))
            answer = await asyncio.to_thread(
                deps.store.answers.undelivered, event.from_user.id, external_id(event)
            )
            if answer is None:
                return False
            log.warning(
                "the answer to message %s was stored but never sent: sending it now",
                external_id(event),
            )

            async def delivered() -> None:
                await asyncio.to_thread(
                    deps.store.answers.mark_delivered, event.from_user.id, answer["id"]
                )

            await deliver_answer(
                bot,
                event.chat.id,
                answer["content"],
                reply_to=event.message_id,
                reply=reply,
                on_sent=delivered,
            )
            return True

    @staticmethod
    async def _unanswered_elsewhere(deps: Deps, event: Message, seen: SeenMessages) -> bool:
        """Stored by an earlier run of the bot, and no answer covers it."""
        stored = external_id(event)
        if stored in seen:
            return False
        unanswered = await asyncio.to_thread(
            deps.store.messages.unanswered, event.from_user.id, chat_prefix(event.chat.id)
        )
        return any(row["external_id"] == stored for row in unanswered)


class GroupingMiddleware(BaseMiddleware):
    """Quick messages become one group: only the group's opener calls the handler.

    The handler gets the group's last message as the event (the answer replies
    to it) and the whole group as `group`; it runs under the chat's turn lock.
    """

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, Message):
            return await handler(event, data)
        grouper: MessageGrouper = data["grouper"]
        group = await grouper.collect(event.chat.id, event, data.get("arrival"))
        if group is None:
            return None
        deps: Deps = data["deps"]
        async with grouper.turn_lock(event.chat.id):
            if deps.chat_lock is None or not is_conversation(event):
                return await handler(group[-1], {**data, "group": group, "elsewhere": []})
            async with deps.chat_lock.hold(event.chat.id):
                elsewhere = await self._stored_elsewhere(deps, event, group)
                if elsewhere is None:
                    return None
                return await handler(group[-1], {**data, "group": group, "elsewhere": elsewhere})

    @staticmethod
    async def _stored_elsewhere(
        deps: Deps, event: Message, group: list[Message]
    ) -> list[MessageRow] | None:
        """Replicas: under the chat's database lock, the chat's unanswered messages that
        other replicas received (they join this turn, as quick messages do), or None when
        another replica's turn has already answered this group."""
        pending = await asyncio.to_thread(
            deps.store.messages.unanswered, event.from_user.id, chat_prefix(event.chat.id)
        )
        mine = {external_id(message) for message in group}
        if not any(row["external_id"] in mine for row in pending):
            log.info("messages %s were answered by another replica", sorted(mine))
            return None
        return [row for row in pending if row["external_id"] not in mine]
