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
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import BufferedInputFile, Message

from app.views import conversations_by_topic, export_user
from bot.render import escape, shorten
from bot.routers.callbacks import Only, forget_menu
from bot.sending import send_html
from bot.texts import Texts
from bot.webapp.telegram import webapp_keyboard
from core.deps import Deps
from core.settings import Settings

MEMORY_FACTS_SHOWN = 30
MEMORY_TOPICS_SHOWN = 10


async def start(message: Message, texts: Texts) -> None:
    await message.answer(texts.start, parse_mode=ParseMode.HTML)


async def show_help(message: Message, settings: Settings, deps: Deps, texts: Texts) -> None:
    """What the bot can do, and what it cannot here: voice that nothing transcribes (no
    transcription endpoint and no describer model) and photos nothing describes."""
    describer = deps.models.get("describer") is not None
    text = texts.help
    if not (settings.transcription_base_url or describer):
        text += texts.help_voice_unread
    if not describer:
        text += texts.help_photos_unread
    await message.answer(text, parse_mode=ParseMode.HTML)


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
        titles = await asyncio.to_thread(
            conversations_by_topic, store, user_id, [topic["id"] for topic in recent]
        )
        lines = [
            f"• {escape(topic['last_message_at'][:10])}: {escape(shorten(topic['summary'], 300))}"
            + "".join(f"\n  ↳ {escape(title)}" for title in titles[topic["id"]])
            for topic in reversed(recent)
        ]
        sections.append("\n".join([texts.memory_topics, *lines]))
    await send_html(
        bot,
        message.chat.id,
        "\n\n".join(sections),
        buttons=webapp_keyboard(deps.settings, texts),
    )


FORGET_KINDS: dict[str, Only] = {
    "fact": "fact", "facts": "fact", "факт": "fact", "факты": "fact",
    "person": "person", "people": "person", "человек": "person", "люди": "person",
    "topic": "topic", "topics": "topic", "тема": "topic", "темы": "topic",
}  # fmt: skip


async def forget(message: Message, command: CommandObject, deps: Deps, texts: Texts) -> None:
    """A paged menu of everything that can be forgotten (`/forget person`: people only);
    pressing an item asks for confirmation."""
    argument = (command.args or "").strip().casefold()
    only = FORGET_KINDS.get(argument, "all") if argument else "all"
    if argument and argument not in FORGET_KINDS:
        await message.answer(texts.forget_unknown_kind)
        return
    menu = await asyncio.to_thread(forget_menu, deps, message.from_user.id, texts, only)
    if menu is None:
        await message.answer(texts.forget_nothing)
        return
    text, keyboard = menu
    await message.answer(text, reply_markup=keyboard)


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
