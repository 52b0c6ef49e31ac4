"""Commands: /start, /help, /new, /memory, /forget, /export, /stats.

Commands are control, not conversation: they are answered, never stored as
messages. Everything they show or change is the sending user's own memory.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from aiogram import Bot, F, Router
from aiogram.enums import ParseMode
from aiogram.filters import Command, CommandStart
from aiogram.types import BufferedInputFile, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.views import export_user
from bot.render import escape, shorten
from bot.routers.callbacks import ForgetAction
from bot.sending import send_html
from bot.texts import Texts
from core.deps import Deps

MEMORY_FACTS_SHOWN = 30
MEMORY_TOPICS_SHOWN = 10
FORGET_CHOICES = 8
BUTTON_CHARS = 60


async def start(message: Message, texts: Texts) -> None:
    await message.answer(texts.start, parse_mode=ParseMode.HTML)


async def show_help(message: Message, texts: Texts) -> None:
    await message.answer(texts.help, parse_mode=ParseMode.HTML)


async def new_segment(message: Message, deps: Deps, texts: Texts) -> None:
    await asyncio.to_thread(deps.store.sessions.start_new_segment, message.from_user.id)
    await message.answer(texts.new_segment)


async def memory(message: Message, bot: Bot, deps: Deps, texts: Texts) -> None:
    user_id = message.from_user.id
    store = deps.store
    facts, people, topics = await asyncio.gather(
        asyncio.to_thread(store.facts.all_of, user_id),
        asyncio.to_thread(store.people.all_of, user_id),
        asyncio.to_thread(store.topics.all_of, user_id),
    )
    if not (facts or people or topics):
        await message.answer(texts.memory_empty)
        return
    sections = []
    if facts:
        lines = [f"• {escape(fact['content'])}" for fact in facts[:MEMORY_FACTS_SHOWN]]
        sections.append("\n".join([texts.memory_facts, *lines]))
    if people:
        lines = [
            f"• {escape(person['name'])}"
            + (f" ({escape(person['circle'])})" if person["circle"] else "")
            + (f": {escape(shorten(person['bio'], 200))}" if person["bio"] else "")
            for person in people
        ]
        sections.append("\n".join([texts.memory_people, *lines]))
    if topics:
        recent = sorted(topics, key=lambda topic: topic["last_message_at"])[-MEMORY_TOPICS_SHOWN:]
        lines = [
            f"• {escape(topic['last_message_at'][:10])}: {escape(shorten(topic['summary'], 300))}"
            for topic in reversed(recent)
        ]
        sections.append("\n".join([texts.memory_topics, *lines]))
    await send_html(bot, message.chat.id, "\n\n".join(sections))


async def forget(message: Message, deps: Deps, texts: Texts) -> None:
    """Buttons for the newest facts and topics; pressing one asks for confirmation."""
    user_id = message.from_user.id
    facts, topics = await asyncio.gather(
        asyncio.to_thread(deps.store.facts.all_of, user_id),
        asyncio.to_thread(deps.store.topics.all_of, user_id),
    )
    if not (facts or topics):
        await message.answer(texts.forget_nothing)
        return
    keyboard = InlineKeyboardBuilder()
    for fact in facts[:FORGET_CHOICES]:
        keyboard.button(
            text=f"📌 {shorten(fact['content'], BUTTON_CHARS)}",
            callback_data=ForgetAction(step="ask", kind="fact", item_id=fact["id"]),
        )
    recent = sorted(topics, key=lambda topic: topic["last_message_at"])[-FORGET_CHOICES:]
    for topic in reversed(recent):
        keyboard.button(
            text=f"💬 {shorten(topic['summary'], BUTTON_CHARS)}",
            callback_data=ForgetAction(step="ask", kind="topic", item_id=topic["id"]),
        )
    keyboard.adjust(1)
    await message.answer(texts.forget_choose, reply_markup=keyboard.as_markup())


async def export(message: Message, deps: Deps, texts: Texts) -> None:
    user_id = message.from_user.id
    data = await asyncio.to_thread(export_user, deps, user_id)
    payload = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    await message.answer_document(
        BufferedInputFile(payload, filename=f"topica-memory-{stamp}.json"),
        caption=texts.export_caption,
    )


async def stats(message: Message, deps: Deps, texts: Texts) -> None:
    user_id = message.from_user.id
    store = deps.store

    def counts() -> dict[str, int]:
        return {
            "messages": store.messages.count(user_id),
            "unarchived": len(store.messages.unarchived(user_id)),
            "topics": len(store.topics.all_of(user_id)),
            "facts": len(store.facts.all_of(user_id)),
            "people": len(store.people.all_of(user_id)),
            "segment": store.sessions.current_segment(user_id) + 1,
        }

    await message.answer(
        texts.stats.format(**await asyncio.to_thread(counts)), parse_mode=ParseMode.HTML
    )


def build_router() -> Router:
    router = Router(name="commands")
    router.message.register(start, CommandStart())
    router.message.register(show_help, Command("help"))
    router.message.register(new_segment, Command("new"))
    router.message.register(memory, Command("memory"))
    router.message.register(forget, Command("forget"))
    router.message.register(export, Command("export"))
    router.message.register(stats, Command("stats"))
    router.message.register(show_help, F.text.startswith("/"))
    return router
