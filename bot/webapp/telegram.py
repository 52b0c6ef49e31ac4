"""Where Telegram opens the Mini App: the bot's menu button and a button under /memory,
both only when `TOPICA_WEBAPP_URL` is set."""

from __future__ import annotations

import logging

from aiogram import Bot
from aiogram.exceptions import TelegramAPIError
from aiogram.types import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MenuButtonWebApp,
    WebAppInfo,
)

from bot.texts import ENGLISH, Texts
from core.settings import Settings

log = logging.getLogger(__name__)


def webapp_keyboard(settings: Settings, texts: Texts) -> InlineKeyboardMarkup | None:
    """A button that opens the Mini App; None without a Mini App URL."""
    if not settings.webapp_url:
        return None
    button = InlineKeyboardButton(
        text=texts.webapp_button, web_app=WebAppInfo(url=settings.webapp_url)
    )
    return InlineKeyboardMarkup(inline_keyboard=[[button]])


async def set_menu_button(bot: Bot, settings: Settings) -> None:
    """With a Mini App URL, the chat menu button opens the Mini App; a refusal by
    Telegram is logged and the bot goes on (the button under /memory still opens it)."""
    if not settings.webapp_url:
        return
    button = MenuButtonWebApp(
        text=ENGLISH.webapp_button, web_app=WebAppInfo(url=settings.webapp_url)
    )
    try:
        await bot.set_chat_menu_button(menu_button=button)
    except TelegramAPIError as error:
        log.warning("the Mini App's menu button was not set: %s", error)
