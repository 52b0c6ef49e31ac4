"""Inline buttons of /forget: page through everything, choose a fact, person or topic,
confirm, and it is deleted (`app.forgetting`).

The menu lists every fact, person and topic, `PAGE_SIZE` a page, with ◀ ▶ buttons that
edit the menu in place. A topic's confirmation lists the facts learnt from it, which go
with it. Ids in button data are looked up with the pressing user's id, so a button can
never reach another user's memory; button data stays within Telegram's 64 bytes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from aiogram import Router
from aiogram.enums import ParseMode
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, InlineKeyboardMarkup, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.forgetting import describe_choice, facts_of_topic, forget, forget_choices
from bot.render import escape, shorten
from bot.texts import Texts
from core.deps import Deps
from core.errors import StoreError

log = logging.getLogger(__name__)

PREVIEW_CHARS = 500
PAGE_SIZE = 8
BUTTON_CHARS = 60
FACTS_LISTED = 20
ICONS = {"fact": "📌", "person": "👤", "topic": "💬"}

Only = Literal["all", "fact", "person", "topic"]


class ForgetAction(CallbackData, prefix="forget"):
    step: Literal["ask", "yes", "no"]
    kind: Literal["fact", "topic", "person"]
    item_id: int


class ForgetPage(CallbackData, prefix="fpage"):
    only: Only
    page: int


def forget_menu(
    deps: Deps, user_id: int, texts: Texts, only: Only = "all", page: int = 0
) -> tuple[str, InlineKeyboardMarkup] | None:
    """The /forget menu's text and buttons at `page` (clamped); None with nothing to forget."""
    choices = forget_choices(deps, user_id, None if only == "all" else only)
    if not choices:
        return None
    pages = (len(choices) + PAGE_SIZE - 1) // PAGE_SIZE
    page = min(max(page, 0), pages - 1)
    keyboard = InlineKeyboardBuilder()
    for choice in choices[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]:
        keyboard.button(
            text=f"{ICONS[choice.kind]} {shorten(choice.text, BUTTON_CHARS)}",
            callback_data=ForgetAction(step="ask", kind=choice.kind, item_id=choice.id),
        )
    shown = min(PAGE_SIZE, len(choices) - page * PAGE_SIZE)
    sizes = [1] * shown
    if pages > 1:
        if page > 0:
            keyboard.button(text="◀", callback_data=ForgetPage(only=only, page=page - 1))
        if page < pages - 1:
            keyboard.button(text="▶", callback_data=ForgetPage(only=only, page=page + 1))
        sizes.append(int(page > 0) + int(page < pages - 1))
    keyboard.adjust(*sizes)
    text = texts.forget_choose
    if pages > 1:
        text = texts.forget_page.format(choose=text, page=page + 1, pages=pages)
    return text, keyboard.as_markup()


async def on_button(
    query: CallbackQuery, callback_data: ForgetAction | ForgetPage, deps: Deps, texts: Texts
) -> None:
    """A /forget button: its message edited to the page or the step the button leads to."""
    await query.answer()
    if not isinstance(query.message, Message):
        return
    user_id = query.from_user.id
    if isinstance(callback_data, ForgetPage):
        menu = await asyncio.to_thread(
            forget_menu, deps, user_id, texts, callback_data.only, callback_data.page
        )
        text, keyboard = menu or (texts.forget_nothing, None)
        await query.message.edit_text(text, reply_markup=keyboard)
        return
    text, keyboard = await _forget_step(user_id, callback_data, deps, texts)
    await query.message.edit_text(text, parse_mode=ParseMode.HTML, reply_markup=keyboard)


def confirmation(deps: Deps, user_id: int, action: ForgetAction, preview: str, texts: Texts) -> str:
    prompt = {
        "fact": texts.forget_confirm_fact,
        "person": texts.forget_confirm_person,
        "topic": texts.forget_confirm_topic,
    }[action.kind].format(content=preview)
    if action.kind != "topic":
        return prompt
    facts = facts_of_topic(deps, user_id, action.item_id)
    if not facts:
        return prompt
    lines = [f"• {escape(shorten(fact['content'], 200))}" for fact in facts[:FACTS_LISTED]]
    if len(facts) > FACTS_LISTED:
        lines.append(f"… (+{len(facts) - FACTS_LISTED})")
    return prompt + "\n\n" + texts.forget_confirm_topic_facts.format(facts="\n".join(lines))


async def _forget_step(
    user_id: int, action: ForgetAction, deps: Deps, texts: Texts
) -> tuple[str, InlineKeyboardMarkup | None]:
    """The message text and buttons after this step of /forget."""
    if action.step == "no":
        return texts.forget_cancelled, None
    content = await asyncio.to_thread(describe_choice, deps, user_id, action.kind, action.item_id)
    if content is None:
        return texts.forget_gone, None
    preview = escape(content[:PREVIEW_CHARS])
    if action.step == "ask":
        buttons = InlineKeyboardBuilder()
        buttons.button(
            text=texts.forget_yes, callback_data=action.model_copy(update={"step": "yes"})
        )
        buttons.button(text=texts.forget_no, callback_data=action.model_copy(update={"step": "no"}))
        prompt = await asyncio.to_thread(confirmation, deps, user_id, action, preview, texts)
        return prompt, buttons.as_markup()
    try:
        await asyncio.to_thread(forget, deps, user_id, action.kind, action.item_id)
    except StoreError:
        return texts.forget_gone, None
    return texts.forgot.format(content=preview), None


def build_router() -> Router:
    router = Router(name="callbacks")
    router.callback_query.register(on_button, ForgetAction.filter())
    router.callback_query.register(on_button, ForgetPage.filter())
    return router
