"""Sources: what an answer was made from, under its Sources button and by `/why`.

An answer sent in a private chat carries a "Sources / Источники" button; pressing it, or
sending `/why` (for the newest answer), shows what the answer's context held of memory:
past conversations with their dates, summaries and the reranker's reasons (and excerpts),
facts, people, earlier messages of the conversation, the searches the model made, and
which agents fell back and why, in the user's language. Memory is only ever shown in
the user's private chat: in a group the button and `/why` say so and show nothing. The
answer id in the button is looked up with the pressing user's id, so a button can never
show another user's memory.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiogram import Bot, Router
from aiogram.enums import ChatType
from aiogram.filters import Command
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, Chat, InlineKeyboardMarkup, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.views import answer_view
from bot.render import escape, shorten
from bot.sending import send_html
from bot.texts import Texts
from core.deps import Deps

SUMMARY_CHARS = 300
EXCERPT_CHARS = 300
MESSAGE_CHARS = 200


class SourcesAction(CallbackData, prefix="sources"):
    answer_id: int


def sources_button(texts: Texts, answer_id: int) -> InlineKeyboardMarkup:
    buttons = InlineKeyboardBuilder()
    buttons.button(text=texts.sources_button, callback_data=SourcesAction(answer_id=answer_id))
    return buttons.as_markup()


def dates(first: str, last: str) -> str:
    return first[:10] if first[:10] == last[:10] else f"{first[:10]} – {last[:10]}"


def topic_lines(topics: list[dict[str, Any]], texts: Texts) -> list[str]:
    lines = [texts.sources_topics]
    for topic in topics:
        when = dates(topic["first_message_at"], topic["last_message_at"])
        cut = f" ({texts.sources_cut})" if topic["cut"] else ""
        lines.append(
            f"• <b>{escape(when)}</b>: {escape(shorten(topic['summary'], SUMMARY_CHARS))}{cut}"
        )
        lines.append(f"  <i>{texts.sources_why}:</i> {escape(topic['reason'])}")
        if topic["excerpt"]:
            excerpt = escape(shorten(topic["excerpt"], EXCERPT_CHARS))
            lines.append(f"<blockquote>{excerpt}</blockquote>")
    return lines


def render_sources(answer: dict[str, Any], texts: Texts) -> str:
    """An answer's sources (`app.views.answer_view`) as Telegram HTML in the user's language."""
    sources = answer["sources"]
    sections = [texts.sources_title + (f"\n{texts.sources_partial}" if answer["partial"] else "")]
    if sources["topics"]:
        sections.append("\n".join(topic_lines(sources["topics"], texts)))
    if sources["facts"]:
        facts = [
            f"• {escape(fact['content'])}"
            + (f" ({texts.sources_core_fact})" if fact["core"] else "")
            for fact in sources["facts"]
        ]
        sections.append("\n".join([texts.sources_facts, *facts]))
    if sources["people"]:
        people = [
            f"• {escape(person['name'])}"
            + (f" ({escape(person['circle'])})" if person["circle"] else "")
            + f" — {escape(person['reason'])}"
            for person in sources["people"]
        ]
        sections.append("\n".join([texts.sources_people, *people]))
    earlier = [
        f"• {escape(message['created_at'][:16].replace('T', ' '))}, "
        f"{texts.sources_you if message['role'] == 'user' else texts.sources_me}: "
        f"{escape(shorten(message['content'], MESSAGE_CHARS))}"
        for message in sources["earlier_messages"]
    ]
    if sources["session_summary"]:
        earlier.append(f"• {texts.sources_summary}")
    if earlier:
        sections.append("\n".join([texts.sources_earlier, *earlier]))
    searches = [
        f"• {escape(tool['name'])}: {escape(shorten(str(tool['args']), MESSAGE_CHARS))}"
        for tool in sources["tools"]
    ]
    if searches:
        sections.append("\n".join([texts.sources_tools, *searches]))
    if len(sections) == 1:
        sections.append(texts.sources_nothing)
    notes = [
        texts.fallback_notes[agent].format(reason=escape(reason))
        for agent, reason in sources["fallbacks"].items()
        if agent in texts.fallback_notes
    ]
    if sources["forgotten"]:
        notes.append(texts.sources_forgotten.format(count=sources["forgotten"]))
    if notes:
        sections.append("\n".join(f"<i>{note}</i>" for note in notes))
    return "\n\n".join(sections)


def is_private(chat: Chat) -> bool:
    return chat.type == ChatType.PRIVATE


async def on_sources(
    query: CallbackQuery, callback_data: SourcesAction, bot: Bot, deps: Deps, texts: Texts
) -> None:
    message = query.message
    if message is None or not is_private(message.chat):
        await query.answer(texts.private_only, show_alert=True)
        return
    answer = await asyncio.to_thread(answer_view, deps, query.from_user.id, callback_data.answer_id)
    if answer is None:
        await query.answer(texts.sources_gone, show_alert=True)
        return
    await query.answer()
    await send_html(
        bot, message.chat.id, render_sources(answer, texts), reply_to=message.message_id
    )


async def why(message: Message, bot: Bot, deps: Deps, texts: Texts) -> None:
    """The sources of the user's newest answer."""
    if not is_private(message.chat):
        await message.answer(texts.private_only)
        return
    answer = await asyncio.to_thread(answer_view, deps, message.from_user.id)
    if answer is None:
        await message.answer(texts.sources_no_answer)
        return
    await send_html(bot, message.chat.id, render_sources(answer, texts))


def build_router() -> Router:
    router = Router(name="sources")
    router.callback_query.register(on_sources, SourcesAction.filter())
    router.message.register(why, Command("why"))
    return router
