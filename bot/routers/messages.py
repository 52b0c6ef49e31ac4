"""Conversation: a closed group of messages becomes one turn of the response graph.

By the time the handler runs, every message of the group is stored
(`StoreIncomingMiddleware`), the group is closed and this chat's previous turn
is done (`GroupingMiddleware`), and Telegram shows "typing…"
(`ChatActionMiddleware`) until the answer is sent.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from aiogram import Bot, Router
from aiogram.types import Message
from aiogram.utils.chat_action import ChatActionMiddleware

from bot.media import prepare_group
from bot.middlewares import GroupingMiddleware, external_id, is_conversation
from bot.sending import send_answer
from bot.texts import Texts
from core.metrics import MESSAGE_TELEGRAM
from core.settings import Settings
from core.tracing import user_key

log = logging.getLogger(__name__)


class Turn(Protocol):
    """One turn over a group whose messages are already stored; returns run_turn's result."""

    async def __call__(
        self, user_id: int, text: str, *, parts: list[dict[str, Any]], external_id: str
    ) -> dict[str, Any]: ...


async def on_group(
    message: Message,
    group: list[Message],
    bot: Bot,
    settings: Settings,
    texts: Texts,
    turn: Turn,
) -> None:
    prepared = await prepare_group(
        bot,
        group,
        texts,
        max_file_bytes=settings.max_file_bytes,
        max_document_chars=settings.max_document_chars,
    )
    for problem_message, reply in prepared.problems:
        await problem_message.reply(reply)
    if not prepared.usable:
        return
    try:
        result = await turn(
            message.from_user.id,
            prepared.text,
            parts=prepared.parts,
            external_id=external_id(message),
        )
    except Exception:
        log.exception("turn failed for user %s", user_key(message.from_user.id))
        await message.reply(texts.turn_failed)
        return
    started = time.perf_counter()
    await send_answer(bot, message.chat.id, result["answer"], reply_to=message.message_id)
    MESSAGE_TELEGRAM.observe(time.perf_counter() - started)


def build_router() -> Router:
    router = Router(name="messages")
    router.message.middleware(GroupingMiddleware())
    router.message.middleware(ChatActionMiddleware())
    router.message.register(on_group, is_conversation, flags={"chat_action": "typing"})
    return router
