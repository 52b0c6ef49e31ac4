"""Conversation: a closed group of messages becomes one turn of the response graph.

Before the turn, what the group's files hold becomes memory (`remember_media`): documents
are kept in passages with their messages, voice is transcribed and photos described by the
media graph, and those texts join the messages' stored text and the turn's.

By the time the handler runs, every message of the group is stored
(`StoreIncomingMiddleware`), the group is closed and this chat's previous turn
is done (`GroupingMiddleware`), and Telegram shows "typing…"
(`ChatActionMiddleware`) until the answer is sent. While the model writes, the answer
grows in a draft (`bot.drafts`) whose stop button ends it; the answer itself is then sent
as a message, with its Sources button.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any, Protocol

from aiogram import Bot, Router
from aiogram.types import Message, MessageGenerationStopped, ReplyParameters
from aiogram.utils.chat_action import ChatActionMiddleware

from app.inbox import Inbox, chat_prefix, stored_id, telegram_message_id
from app.media import MediaDigester, index_passages, keep_document, media_item
from app.reading import ReadLimits
from app.turns import OnText
from bot.drafts import drafts_for
from bot.grouping import MessageGrouper
from bot.media import PreparedGroup, describe, prepare_group
from bot.middlewares import GroupingMiddleware, SeenMessages, external_id, is_conversation
from bot.routers.sources import sources_button
from bot.sending import deliver_answer
from bot.texts import Texts, texts_for
from bot.webhook import WebhookReply
from core.deps import Deps
from core.metrics import MESSAGE_TELEGRAM
from core.records import MessageRow
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
        earlier_ids: Sequence[str] = (),
        on_text: OnText | None = None,
    ) -> dict[str, Any]: ...


async def remember_media(
    deps: Deps, digester: MediaDigester, user_id: int, prepared: PreparedGroup
) -> None:
    """Documents kept as memory (their vectors indexed after the answer, `index_later`);
    voice and photos turned into their messages' text (in the store and in the turn's
    text). A failure here costs the memory of the media, never the turn."""
    stored = {}
    for file, _ in [*prepared.documents, *prepared.media]:
        row = await asyncio.to_thread(
            deps.store.messages.by_external_id, user_id, external_id(file.message)
        )
        if row is not None:
            stored[file.message.message_id] = row
    for file, content in prepared.documents:
        if (row := stored.get(file.message.message_id)) is not None:
            await asyncio.to_thread(
                keep_document, deps, user_id, row["id"], file.name, file.mime_type, content,
                index=False,
            )  # fmt: skip
    items = [
        media_item(row["id"], file.kind, file.name, file.mime_type, data, row["content"])
        for file, data in prepared.media
        if (row := stored.get(file.message.message_id)) is not None
        and file.kind in ("audio", "image")
    ]
    if not items:
        return
    result = await digester.digest(user_id, items)
    telegram_ids = {row["id"]: telegram_id for telegram_id, row in stored.items()}
    for message_id, text in (result.get("texts") or {}).items():
        prepared.add_text(telegram_ids[message_id], text)


_indexing: set[asyncio.Task] = set()


def index_later(deps: Deps, user_id: int) -> None:
    """Index the documents' passages in the background, so a long document never delays
    the answer nor the chat's next turn; if the process stops first, the vector queue
    keeps them for the next indexing run (every memory run starts with one)."""
    task = asyncio.create_task(asyncio.to_thread(index_passages, deps, user_id))
    _indexing.add(task)
    task.add_done_callback(_indexing.discard)


async def on_group(
    message: Message,
    group: list[Message],
    bot: Bot,
    deps: Deps,
    settings: Settings,
    texts: Texts,
    turn: Turn,
    digester: MediaDigester,
    elsewhere: list[MessageRow] | None = None,
    webhook_reply: WebhookReply | None = None,
) -> None:
    prepared = await prepare_group(
        bot,
        group,
        texts,
        max_file_bytes=settings.max_file_bytes,
        max_document_chars=settings.max_document_chars,
        read_limits=ReadLimits.from_settings(settings),
    )
    for problem_message, reply in prepared.problems:
        await problem_message.reply(reply)
    if not prepared.usable:
        return
    try:
        await remember_media(deps, digester, message.from_user.id, prepared)
    except Exception:
        log.exception("media of user %s not kept as memory", user_key(message.from_user.id))
    try:
        await answer_group(
            message,
            group,
            bot,
            deps,
            settings,
            texts,
            turn,
            prepared,
            elsewhere or [],
            reply=webhook_reply,
        )
    finally:
        if prepared.documents:
            index_later(deps, message.from_user.id)


async def answer_group(
    message: Message,
    group: list[Message],
    bot: Bot,
    deps: Deps,
    settings: Settings,
    texts: Texts,
    turn: Turn,
    prepared: PreparedGroup,
    elsewhere: Sequence[MessageRow] = (),
    *,
    reply: WebhookReply | None = None,
) -> None:
    """The turn over the group, its answer sent (streamed in a draft while written; in the
    webhook's `reply` where it can be).

    `elsewhere`: the chat's unanswered messages other replicas received; they join the
    turn in Telegram order, and the answer replies to the newest message of them all, so
    it covers every one (`MessageRepository.unanswered`)."""
    ids = [external_id(item) for item in group]
    before = [
        row for row in elsewhere if telegram_message_id(row["external_id"]) < message.message_id
    ]
    after = [row for row in elsewhere if row not in before]
    text = "\n\n".join(
        [*(row["content"] for row in before), prepared.text, *(row["content"] for row in after)]
    )
    ordered = sorted([*ids, *(row["external_id"] for row in elsewhere)], key=telegram_message_id)
    async with drafts_for(bot, message, settings, deps.stops) as drafts:
        try:
            result = await turn(
                message.from_user.id,
                text,
                parts=prepared.parts,
                external_id=ordered[-1],
                earlier_ids=ordered[:-1],
                on_text=drafts.update if drafts else None,
            )
        except Exception:
            log.exception("turn failed for user %s", user_key(message.from_user.id))
            result = None
    await deliver(
        bot, deps, message.from_user.id, telegram_message_id(ordered[-1]), result, texts, reply
    )


async def deliver(
    bot: Bot,
    deps: Deps,
    user_id: int,
    reply_to: int,
    result: dict[str, Any] | None,
    texts: Texts,
    reply: WebhookReply | None = None,
) -> None:
    """Send a turn's answer (None: the turn failed) to `user_id` as a reply in their private
    chat (whose chat id is the user's id), with its Sources button; once sent, the answer
    is marked delivered in that user's store. Given the update's webhook `reply`, an
    answer that is one message goes in the webhook's response (`bot.webhook`), marked
    delivered once that is written."""
    chat_id = user_id
    if result is None:
        await bot.send_message(
            chat_id, texts.turn_failed, reply_parameters=ReplyParameters(message_id=reply_to)
        )
        return
    buttons = sources_button(texts, result["answer_id"]) if result["answer_id"] else None
    text = result["answer"] or texts.stopped_before_writing
    answer_id = result["answer_id"]

    async def delivered() -> None:
        if answer_id:
            await asyncio.to_thread(deps.store.answers.mark_delivered, user_id, answer_id)

    started = time.perf_counter()
    await deliver_answer(
        bot, chat_id, text, reply_to=reply_to, buttons=buttons, reply=reply, on_sent=delivered
    )
    MESSAGE_TELEGRAM.observe(time.perf_counter() - started)


async def answer_unanswered(
    bot: Bot,
    deps: Deps,
    user_ids: list[int],
    grouper: MessageGrouper,
    seen: SeenMessages,
    turn: Turn,
) -> list[asyncio.Task[None]]:
    """At start-up: each user's private messages that were stored but never answered (the
    bot stopped mid-turn) are answered now, as one turn, in a task each.

    They are marked seen before this returns, so Telegram redelivering them once polling
    starts is a duplicate; the turn holds the chat's turn lock, so new messages wait."""
    tasks = []
    for user_id in user_ids:
        rows = await asyncio.to_thread(
            deps.store.messages.unanswered, user_id, chat_prefix(user_id)
        )
        if not rows:
            continue
        for row in rows:
            seen.add(row["external_id"])
        log.warning(
            "user %s: %d message(s) stored but never answered: answering them now",
            user_key(user_id),
            len(rows),
        )
        tasks.append(asyncio.create_task(_answer_rows(bot, deps, user_id, rows, grouper, turn)))
    return tasks


async def _answer_rows(
    bot: Bot,
    deps: Deps,
    user_id: int,
    rows: list[MessageRow],
    grouper: MessageGrouper,
    turn: Turn,
) -> None:
    texts = texts_for(None)
    async with grouper.turn_lock(user_id), AsyncExitStack() as replicas:
        if deps.chat_lock is not None:  # another replica may have answered them meanwhile
            await replicas.enter_async_context(deps.chat_lock.hold(user_id))
            rows = await asyncio.to_thread(
                deps.store.messages.unanswered, user_id, chat_prefix(user_id)
            )
            if not rows:
                return
        last = rows[-1]["external_id"]
        try:
            result = await turn(
                user_id,
                "\n\n".join(row["content"] for row in rows),
                parts=[],
                external_id=last,
                earlier_ids=[row["external_id"] for row in rows[:-1]],
            )
        except Exception:
            log.exception("turn failed for user %s", user_key(user_id))
            result = None
        await deliver(bot, deps, user_id, telegram_message_id(last), result, texts)


async def on_stop(event: MessageGenerationStopped, deps: Deps) -> None:
    """The stop button of a draft: the turn it belongs to stops writing at once."""
    stopped = deps.stops.stop(stored_id(event.chat.id, event.draft_id))
    log.info("chat %s pressed stop: %s", user_key(event.chat.id), "stopped" if stopped else "late")


async def on_edit(message: Message, inbox: Inbox, texts: Texts) -> None:
    """An edited message: memory keeps its new text only (the old one in its history),
    searched anew, and its topic is summarised again by the next memory run. The answer
    already given stays; nothing is sent. An edit of a message not stored yet is applied
    when the message is stored (`Inbox`)."""
    row = await inbox.edit(
        message.chat.id, message.from_user.id, external_id(message), describe(message, texts)
    )
    if row is None:
        log.info(
            "user %s edited a message that is not stored yet: the edit is held for it",
            user_key(message.from_user.id),
        )


def build_router() -> Router:
    router = Router(name="messages")
    router.message.middleware(GroupingMiddleware())
    router.message.middleware(ChatActionMiddleware())
    router.message.register(on_group, is_conversation, flags={"chat_action": "typing"})
    router.edited_message.register(on_edit, is_conversation)
    router.stopped_message_generation.register(on_stop)
    return router
