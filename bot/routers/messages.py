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
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiogram import Bot, Router
from aiogram.types import Message, MessageGenerationStopped, ReplyParameters
from aiogram.utils.chat_action import ChatActionMiddleware

from app.inbox import Inbox, stored_id, telegram_message_id
from app.media import MediaDigester, index_passages, keep_document, media_item
from app.reading import ReadLimits
from app.turns import Turn, TurnRequest, turn_text
from bot.drafts import drafts_for
from bot.grouping import MessageGrouper
from bot.media import PreparedGroup, describe, prepare_group
from bot.middlewares import GroupingMiddleware
from bot.routers.sources import sources_button
from bot.sending import deliver_answer, fit_answer
from bot.texts import Texts, texts_for
from bot.updates import external_id, is_conversation
from bot.webhook import WebhookReply
from core.deps import Deps
from core.metrics import MESSAGE_TELEGRAM
from core.records import MessageRow
from core.settings import Settings
from core.tracing import user_key

log = logging.getLogger(__name__)


async def remember_media(
    deps: Deps,
    digester: MediaDigester,
    user_id: int,
    prepared: PreparedGroup,
    rows: Mapping[int, MessageRow],
) -> None:
    """Documents kept as memory (their vectors indexed after the answer, `index_later`);
    voice and photos turned into their messages' text (in the store and in the turn's
    text). `rows` are the group's stored messages by Telegram message id. A failure here
    costs the memory of the media, never the turn."""
    for file, content in prepared.documents:
        row = rows[file.message.message_id]
        await asyncio.to_thread(
            keep_document, deps, user_id, row["id"], file.name, file.mime_type, content,
            index=False,
        )  # fmt: skip
    items = [
        media_item(row["id"], file.kind, file.name, file.mime_type, data, row["content"])
        for file, data in prepared.media
        if file.kind in ("audio", "image") and (row := rows[file.message.message_id])
    ]
    if not items:
        return
    result = await digester.digest(user_id, items)
    telegram_ids = {row["id"]: telegram_id for telegram_id, row in rows.items()}
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
    rows: list[MessageRow],
    elsewhere: list[MessageRow],
    bot: Bot,
    deps: Deps,
    settings: Settings,
    texts: Texts,
    turn: Turn,
    digester: MediaDigester,
    webhook_reply: WebhookReply | None = None,
) -> None:
    """The group's files read, its media remembered, then one turn over the group and
    the chat's unanswered messages other replicas received (`elsewhere`), in Telegram
    order; the answer replies to the newest of them all, so it covers every one."""
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
    user_id = message.from_user.id
    try:
        by_telegram_id = {item.message_id: row for item, row in zip(group, rows, strict=True)}
        await remember_media(deps, digester, user_id, prepared, by_telegram_id)
    except Exception:
        log.exception("media of user %s not kept as memory", user_key(user_id))
    ordered = sorted([*rows, *elsewhere], key=lambda row: telegram_message_id(row["external_id"]))
    blocks = {external_id(item): prepared.blocks.get(item.message_id, "") for item in group}
    request = TurnRequest(
        user_id=user_id, rows=ordered, text=turn_text(ordered, blocks), parts=prepared.parts
    )
    try:
        async with drafts_for(bot, message, settings, deps.stops) as drafts:
            on_text = drafts.update if drafts else None
            result = await run_safely(turn, replace(request, on_text=on_text))
        await deliver(bot, deps, request, result, texts, webhook_reply)
    finally:
        if prepared.documents:
            index_later(deps, user_id)


async def run_safely(turn: Turn, request: TurnRequest) -> dict[str, Any] | None:
    """The turn's result, or None (logged) when it failed."""
    try:
        return await turn(request)
    except Exception:
        log.exception("turn failed for user %s", user_key(request.user_id))
        return None


async def deliver(
    bot: Bot,
    deps: Deps,
    request: TurnRequest,
    result: dict[str, Any] | None,
    texts: Texts,
    reply: WebhookReply | None = None,
) -> None:
    """Send a turn's answer (None: the turn failed) to its user as a reply to the newest
    message it answers, in their private chat (whose chat id is the user's id), with its
    Sources button; once sent, the answer
    is marked delivered in that user's store. Given the update's webhook `reply`, an
    answer that is one message goes in the webhook's response (`bot.webhook`), marked
    delivered once that is written. An answer longer than `max_messages_per_answer`
    messages is cut there with a note in the user's language, and kept as it was sent
    (partial)."""
    user_id = chat_id = request.user_id
    reply_to = telegram_message_id(request.rows[-1]["external_id"])
    if result is None:
        await bot.send_message(
            chat_id, texts.turn_failed, reply_parameters=ReplyParameters(message_id=reply_to)
        )
        return
    buttons = sources_button(texts, result["answer_id"]) if result["answer_id"] else None
    text = result["answer"] or texts.stopped_before_writing
    answer_id = result["answer_id"]
    limit = deps.settings.max_messages_per_answer
    note = texts.answer_cut.format(limit=limit)
    kept = fit_answer(text, limit, note)
    if kept is not None:  # kept as it is sent, a partial answer
        if answer_id:
            await asyncio.to_thread(deps.store.answers.cut, user_id, answer_id, kept)
        text = f"{kept}\n\n{note}"

    async def delivered() -> None:
        if answer_id:
            await asyncio.to_thread(deps.store.answers.mark_delivered, user_id, answer_id)

    started = time.perf_counter()
    await deliver_answer(
        bot, chat_id, text, reply_to=reply_to, buttons=buttons, reply=reply, on_sent=delivered
    )
    MESSAGE_TELEGRAM.observe(time.perf_counter() - started)


async def answer_unanswered(
    bot: Bot, inbox: Inbox, user_ids: list[int], grouper: MessageGrouper, turn: Turn
) -> list[asyncio.Task[None]]:
    """At start-up: each user's private messages that were stored but never answered (the
    bot stopped mid-turn) are answered now, as one turn, in a task each.

    They are marked seen before this returns (`Inbox.pickup`), so Telegram redelivering
    them once polling starts is a duplicate; the turn holds the chat's turn lock, so new
    messages wait."""
    tasks = []
    for user_id in user_ids:
        rows = await inbox.pickup(user_id, user_id)
        if not rows:
            continue
        log.warning(
            "user %s: %d message(s) stored but never answered: answering them now",
            user_key(user_id),
            len(rows),
        )
        tasks.append(asyncio.create_task(_answer_rows(bot, inbox, user_id, grouper, turn)))
    return tasks


async def _answer_rows(
    bot: Bot, inbox: Inbox, user_id: int, grouper: MessageGrouper, turn: Turn
) -> None:
    """The user's unanswered messages answered as one turn (read again under the
    replicas' chat lock: another replica may have answered them meanwhile)."""
    async with grouper.turn_lock(user_id), inbox.replicas(user_id):
        rows = await inbox.unanswered(user_id, user_id)
        if not rows:
            return
        request = TurnRequest(user_id=user_id, rows=rows, text=turn_text(rows))
        result = await run_safely(turn, request)
        await deliver(bot, inbox.deps, request, result, texts_for(None))


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
