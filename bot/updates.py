"""What an update is: the tests the bot's middlewares and routers share."""

from __future__ import annotations

from typing import Any

from aiogram.enums import ChatType, ContentType
from aiogram.types import Chat, Message, TelegramObject, User

from app.inbox import stored_id


def external_id(message: Message) -> str:
    """The stored id of a Telegram message (`app.inbox.stored_id`)."""
    return stored_id(message.chat.id, message.message_id)


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


def sender_id(data: dict[str, Any]) -> int | None:
    """Who an update comes from: its user, or for an update that names only a chat (the
    stop button of a draft) the user of that private chat, whose id is the chat's."""
    user: User | None = data.get("event_from_user")
    if user is not None:
        return user.id
    chat: Chat | None = data.get("event_chat")
    return chat.id if chat is not None and chat.type == ChatType.PRIVATE else None
