"""Group chats: a user's memory is private, so nothing of it is ever shown in a group.

This router comes first. In a group or supergroup every command (`/memory`, `/export`,
`/stats`, `/forget`, `/why`, …) and every message addressed to the bot (mentioning it, or
replying to it) gets one reply in the user's language: talk to me privately. Other group
messages get nothing. Buttons pressed on a message in a group (Sources, /forget's
confirmations) are refused with an alert and change nothing. Group messages are stored
only with `TOPICA_GROUP_MEMORY=true` (`StoreIncomingMiddleware`), and never answered;
then their edits are kept as a private chat's are (`bot.routers.messages.on_edit`).
"""

from __future__ import annotations

import logging

from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.types import CallbackQuery, Message

from bot.routers.messages import on_edit
from bot.texts import Texts
from bot.updates import is_command, is_said
from core.settings import Settings
from core.tracing import user_key

log = logging.getLogger(__name__)

IN_GROUP = F.chat.type != ChatType.PRIVATE
PRESSED_IN_GROUP = F.message.chat.type != ChatType.PRIVATE


def remembered_in_group(message: Message, settings: Settings) -> bool:
    """A group message kept in its sender's memory (`TOPICA_GROUP_MEMORY`)."""
    return settings.group_memory and is_said(message)


async def addressed_to_bot(message: Message, bot: Bot) -> bool:
    """A command, a message naming the bot, or a reply to one of its messages."""
    if is_command(message):
        return True
    me = await bot.me()
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == me.id:
        return True
    text = (message.text or message.caption or "").casefold()
    return bool(me.username) and f"@{me.username.casefold()}" in text


async def on_group_message(message: Message, bot: Bot, texts: Texts) -> None:
    addressed = await addressed_to_bot(message, bot)
    log.info(
        "group chat %s: %s from user %s refused (memory is private)",
        user_key(message.chat.id),
        "a command" if is_command(message) else "a message",
        user_key(message.from_user.id) if message.from_user else None,
    )
    if addressed:
        await message.reply(texts.group_refusal)


async def on_group_button(query: CallbackQuery, texts: Texts) -> None:
    log.info("group chat: a button of user %s refused", user_key(query.from_user.id))
    await query.answer(texts.private_only, show_alert=True)


def build_router() -> Router:
    router = Router(name="groups")
    router.message.register(on_group_message, IN_GROUP)
    router.edited_message.register(on_edit, IN_GROUP, remembered_in_group)
    router.callback_query.register(on_group_button, PRESSED_IN_GROUP)
    return router
