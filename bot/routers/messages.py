"""Conversation: a closed group of messages becomes one turn of the response graph.

By the time the handler runs, every message of the group is stored
(`StoreIncomingMiddleware`), the group is closed and this chat's previous turn
is done (`GroupingMiddleware`), and Telegram shows "typing…"
(`ChatActionMiddleware`) until the answer is sent. While the model writes, the answer
grows in a draft (`bot.drafts`) whose stop button ends it; the answer itself is then sent
as a message, with its Sources button.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from aiogram import Bot, Router
from aiogram.types import Message, MessageGenerationStopped
from aiogram.utils.chat_action import ChatActionMiddleware

from app.turns import OnText
from bot.drafts import drafts_for
from bot.media import prepare_group
from bot.middlewares import GroupingMiddleware, external_id, is_conversation, stored_id
from bot.routers.sources import sources_button
from bot.sending import send_answer
from bot.texts import Texts
from core.deps import Deps
from core.metrics import MESSAGE_TELEGRAM
from core.settings import Settings
from core.tracing import user_key

log = logging.getLogger(__name__)


class Turn(Protocol):
    """One turn over a group whose messages are already stored; returns run_turn's result.
    `on_text` sees the answer while it is written."""

    async def __call__(
        self,
        user_id: int,
        text: str,
        *,
        parts: list[dict[str, Any]],
        external_id: str,
        on_text: OnText | None = None,
    ) -> dict[str, Any]: ...


async def on_group(
    message: Message,
    group: list[Message],
    bot: Bot,
    deps: Deps,
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
    async with drafts_for(bot, message, settings, deps.stops) as drafts:
        try:
            result = await turn(
                message.from_user.id,
                prepared.text,
                parts=prepared.parts,
                external_id=external_id(message),
                on_text=drafts.update if drafts else None,
            )
        except Exception:
            log.exception("turn failed for user %s", user_key(message.from_user.id))
            result = None
    if result is None:
        await message.reply(texts.turn_failed)
        return
    buttons = sources_button(texts, result["answer_id"]) if result["answer_id"] else None
    started = time.perf_counter()
    await send_answer(
        bot,
        message.chat.id,
        result["answer"] or texts.stopped_before_writing,
        reply_to=message.message_id,
        buttons=buttons,
    )
    MESSAGE_TELEGRAM.observe(time.perf_counter() - started)


async def on_stop(event: MessageGenerationStopped, deps: Deps) -> None:
    """The stop button of a draft: the turn it belongs to stops writing at once."""
    stopped = deps.stops.stop(stored_id(event.chat.id, event.draft_id))
    log.info("chat %s pressed stop: %s", user_key(event.chat.id), "stopped" if stopped else "late")


def build_router() -> Router:
    router = Router(name="messages")
    router.message.middleware(GroupingMiddleware())
    router.message.middleware(ChatActionMiddleware())
    router.message.register(on_group, is_conversation, flags={"chat_action": "typing"})
    router.stopped_message_generation.register(on_stop)
    return router
