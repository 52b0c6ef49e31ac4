"""Sending an answer: Markdown → Telegram HTML, split, replied, plain text if refused.

Each part is sent as HTML; the first replies to the user's message, buttons (the
answer's Sources) go under the last. A part
Telegram refuses to parse ("can't parse entities") is sent again as its plain
text, so a rendering bug costs formatting, never the answer. An answer that is one
well-nested message may instead ride on the webhook's response (`deliver_answer`,
`bot.webhook`).
"""

from __future__ import annotations

import logging

from aiogram import Bot
from aiogram.enums import ParseMode
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError, TelegramNotFound
from aiogram.methods import SendMessage
from aiogram.types import InlineKeyboardMarkup, Message, ReplyParameters

from bot.render import html_to_plain, markdown_to_html, well_nested
from bot.splitting import split_message
from bot.webhook import OnSent, WebhookReply

log = logging.getLogger(__name__)


GONE_CHAT = ("chat not found", "user is deactivated", "bot was blocked", "bot was kicked")
"""Telegram's descriptions of a private chat that no longer takes the bot's messages."""


def refused_for_good(error: Exception) -> bool:
    """Whether a send failed because the chat will never take it (403, chat not found),
    not for a passing reason (network, 5xx, 429)."""
    if isinstance(error, TelegramForbiddenError | TelegramNotFound):
        return True
    return isinstance(error, TelegramBadRequest) and any(
        words in error.message.lower() for words in GONE_CHAT
    )


def is_parse_error(error: TelegramBadRequest) -> bool:
    return "can't parse entities" in error.message.lower()


async def send_html(
    bot: Bot,
    chat_id: int,
    markup: str,
    *,
    reply_to: int | None = None,
    buttons: InlineKeyboardMarkup | None = None,
) -> list[Message]:
    """HTML in parts under Telegram's limit; a part Telegram cannot parse goes as plain text.
    The first part replies to `reply_to`; `buttons` go under the last part."""
    sent: list[Message] = []
    parts = split_message(markup, html=True)
    for index, part in enumerate(parts):
        reply = (
            ReplyParameters(message_id=reply_to, allow_sending_without_reply=True)
            if reply_to is not None and index == 0
            else None
        )
        kwargs = (
            {"reply_markup": buttons} if buttons is not None and index == len(parts) - 1 else {}
        )
        try:
            sent.append(
                await bot.send_message(
                    chat_id, part, parse_mode=ParseMode.HTML, reply_parameters=reply, **kwargs
                )
            )
        except TelegramBadRequest as error:
            if not is_parse_error(error):
                raise
            log.warning(
                "Telegram refused the HTML of part %d (%s); sending plain text", index, error
            )
            plains = split_message(html_to_plain(part))
            for plain_index, plain in enumerate(plains):
                sent.append(
                    await bot.send_message(
                        chat_id,
                        plain,
                        parse_mode=None,
                        reply_parameters=reply if plain_index == 0 else None,
                        **(kwargs if plain_index == len(plains) - 1 else {}),
                    )
                )
    return sent


async def send_answer(
    bot: Bot,
    chat_id: int,
    markdown: str,
    *,
    reply_to: int,
    buttons: InlineKeyboardMarkup | None = None,
) -> list[Message]:
    return await send_html(
        bot, chat_id, markdown_to_html(markdown), reply_to=reply_to, buttons=buttons
    )


def fit_answer(markdown: str, limit: int, note: str) -> str | None:
    """The longest start of `markdown` that goes, with `note` after it, in at most `limit`
    messages (cut at a space where one is near); None when the whole answer fits."""

    def fits(text: str) -> bool:
        return len(split_message(markdown_to_html(text), html=True)) <= limit

    if fits(markdown):
        return None
    shortest, longest = 0, len(markdown)  # fits(start[:shortest] + note); not longest
    while longest - shortest > 1:
        middle = (shortest + longest) // 2
        if fits(f"{markdown[:middle].rstrip()}\n\n{note}"):
            shortest = middle
        else:
            longest = middle
    kept = markdown[:shortest]
    space = max(kept.rfind(" "), kept.rfind("\n"))
    return (kept[:space] if space > len(kept) // 2 else kept).rstrip()


def answer_as_one_message(
    chat_id: int,
    markdown: str,
    *,
    reply_to: int,
    buttons: InlineKeyboardMarkup | None = None,
) -> SendMessage | None:
    """The `sendMessage` that sends the answer whole (as `send_answer` would), or None when
    it takes more than one message or its HTML is not well nested: a method in a webhook's
    response gets no reply, so Telegram refusing its HTML could not fall back to plain text,
    and the answer would be lost."""
    parts = split_message(markdown_to_html(markdown), html=True)
    if len(parts) != 1 or not well_nested(parts[0]):
        return None
    return SendMessage(
        chat_id=chat_id,
        text=parts[0],
        parse_mode=ParseMode.HTML,
        reply_parameters=ReplyParameters(message_id=reply_to, allow_sending_without_reply=True),
        reply_markup=buttons,
    )


async def deliver_answer(
    bot: Bot,
    chat_id: int,
    markdown: str,
    *,
    reply_to: int,
    buttons: InlineKeyboardMarkup | None = None,
    reply: WebhookReply | None,
    on_sent: OnSent,
) -> None:
    """Send the answer in the webhook's `reply` when it is one message and the response is
    still open (`bot.webhook`), else with calls; `on_sent` once it is sent or written."""
    if reply is not None:
        method = answer_as_one_message(chat_id, markdown, reply_to=reply_to, buttons=buttons)
        if method is not None and reply.offer(method, on_sent):
            return
    await send_answer(bot, chat_id, markdown, reply_to=reply_to, buttons=buttons)
    await on_sent()
