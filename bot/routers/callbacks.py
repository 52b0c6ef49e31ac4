"""Inline buttons of /forget: choose a fact or topic, confirm, and it is deleted.

A forgotten fact leaves the relational store (its history records the
deletion) and the vector index; a forgotten topic takes its messages with it,
from both. Ids in button data are looked up with the pressing user's id, so a
button can never reach another user's memory.
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

from bot.render import escape
from bot.texts import Texts
from core.deps import Deps
from core.errors import StoreError, VectorStoreUnavailable
from core.tracing import user_key

log = logging.getLogger(__name__)

PREVIEW_CHARS = 500


class ForgetAction(CallbackData, prefix="forget"):
    step: Literal["ask", "yes", "no"]
    kind: Literal["fact", "topic"]
    item_id: int


def _content(deps: Deps, user_id: int, kind: str, item_id: int) -> str | None:
    try:
        if kind == "fact":
            return deps.store.facts.get(user_id, item_id)["content"]
        return deps.store.topics.get(user_id, item_id)["summary"]
    except StoreError:
        return None


def _forget(deps: Deps, user_id: int, kind: str, item_id: int) -> None:
    """Delete from the store; the vector queue then takes the vectors out of the index
    (now, or on the next indexing run if the vector store is down)."""
    if kind == "fact":
        deps.store.facts.delete(user_id, item_id, reason="forgotten at the user's request")
    else:
        deps.store.topics.delete(user_id, item_id)
    try:
        deps.indexer.index_all(user_id)
    except VectorStoreUnavailable as error:
        log.warning("user %s: forgotten, vectors removed later: %s", user_key(user_id), error)


async def on_forget(
    query: CallbackQuery, callback_data: ForgetAction, deps: Deps, texts: Texts
) -> None:
    await query.answer()
    if not isinstance(query.message, Message):
        return
    text, keyboard = await _forget_step(query.from_user.id, callback_data, deps, texts)
    await query.message.edit_text(text, parse_mode=ParseMode.HTML, reply_markup=keyboard)


async def _forget_step(
    user_id: int, action: ForgetAction, deps: Deps, texts: Texts
) -> tuple[str, InlineKeyboardMarkup | None]:
    """The message text and buttons after this step of /forget."""
    if action.step == "no":
        return texts.forget_cancelled, None
    content = await asyncio.to_thread(_content, deps, user_id, action.kind, action.item_id)
    if content is None:
        return texts.forget_gone, None
    preview = escape(content[:PREVIEW_CHARS])
    if action.step == "ask":
        prompt = texts.forget_confirm_fact if action.kind == "fact" else texts.forget_confirm_topic
        buttons = InlineKeyboardBuilder()
        buttons.button(
            text=texts.forget_yes, callback_data=action.model_copy(update={"step": "yes"})
        )
        buttons.button(text=texts.forget_no, callback_data=action.model_copy(update={"step": "no"}))
        return prompt.format(content=preview), buttons.as_markup()
    try:
        await asyncio.to_thread(_forget, deps, user_id, action.kind, action.item_id)
    except StoreError:
        return texts.forget_gone, None
    return texts.forgot.format(content=preview), None


def build_router() -> Router:
    router = Router(name="callbacks")
    router.callback_query.register(on_forget, ForgetAction.filter())
    return router
