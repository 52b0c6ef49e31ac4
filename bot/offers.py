"""Reminder offers in Telegram: each new offer (a commitment the Archivist found) is sent
once to the user's private chat with two buttons, "Remind me <time>" and "No thanks";
the press is answered in `bot.routers.tasks`.

An offer is marked sent before its send (`app.offers.offers_to_send`), so replicas never
send it twice; a send that fails for a passing reason gives it back for a later pass,
one Telegram refuses for good (the chat is gone) keeps it sent, never to be retried.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from aiogram import Bot
from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardMarkup
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.offers import not_sent, offer_local_time, offers_to_send
from bot.render import escape, shorten
from bot.sending import refused_for_good, send_html
from bot.task_texts import task_texts_for

if TYPE_CHECKING:
    from core.deps import Deps
    from stores.relational.offers import OfferRow

SAID_CHARS = 200

log = logging.getLogger(__name__)


class OfferAnswer(CallbackData, prefix="offer"):
    answer: Literal["accept", "dismiss"]
    offer_id: int


def offer_message(offer: OfferRow, said: str) -> tuple[str, InlineKeyboardMarkup]:
    """The offer as Telegram HTML (what the user said, the time, the reminder) and its
    buttons, in the language of its request."""
    words = task_texts_for(offer["request"])
    when = offer_local_time(offer)
    text = words.offer.format(
        said=escape(shorten(said, SAID_CHARS)), when=when, what=escape(offer["request"])
    )
    keyboard = InlineKeyboardBuilder()
    for answer in ("accept", "dismiss"):
        keyboard.button(
            text=words.offer_buttons[answer].format(when=when),
            callback_data=OfferAnswer(answer=answer, offer_id=offer["id"]),
        )
    keyboard.adjust(1)
    return text, keyboard.as_markup()


def said_in(deps: Deps, offer: OfferRow) -> str:
    """The text of the user's message the commitment was said in."""
    found = deps.store.messages.by_ids(offer["user_id"], [offer["message_id"]])
    return found[0]["content"] if found else offer["said_when"]


async def send_offers(deps: Deps, bot: Bot, now: datetime) -> int:
    """Send each new offer to its user's private chat; how many were sent."""
    sent = 0
    for offer in await asyncio.to_thread(offers_to_send, deps, now):
        said = await asyncio.to_thread(said_in, deps, offer)
        text, keyboard = offer_message(offer, said)
        try:
            await send_html(bot, offer["user_id"], text, buttons=keyboard)
        except Exception as error:
            if refused_for_good(error):
                log.warning("offer %s: undeliverable (%s)", offer["id"], error)
                continue
            log.exception("offer %s: send failed; offered again later", offer["id"])
            await asyncio.to_thread(not_sent, deps, offer)
            continue
        sent += 1
    return sent
