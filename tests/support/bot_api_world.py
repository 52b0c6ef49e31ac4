"""The Telegram-like world of the fake Bot API server (`tests.support.bot_api_server`):
its users and chats, the calls it records, and Telegram's HTML checks.

Like Telegram, the server validates `parse_mode=HTML` markup (allowed tags, nesting,
entities) and the length of the visible text (4096 UTF-16 code units);
`check_telegram_html` is that check, `HtmlError` its refusal.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

__all__ = [
    "MAX_TEXT_UTF16",
    "ApiCall",
    "FakeUser",
    "HtmlError",
    "check_telegram_html",
    "group_chat",
    "utf16_length",
]


MAX_TEXT_UTF16 = 4096
ALLOWED_TAGS = {
    "b": set(),
    "strong": set(),
    "i": set(),
    "em": set(),
    "u": set(),
    "ins": set(),
    "s": set(),
    "strike": set(),
    "del": set(),
    "tg-spoiler": set(),
    "span": {"class"},
    "a": {"href"},
    "code": {"class"},
    "pre": set(),
    "blockquote": {"expandable"},
    "tg-emoji": {"emoji-id"},
}
NAMED_ENTITIES = {"lt", "gt", "amp", "quot"}


@dataclass(frozen=True)
class FakeUser:
    id: int
    first_name: str = "Alexei"
    language_code: str | None = "en"
    username: str | None = None

    def as_dict(self) -> dict[str, Any]:
        user: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.language_code:
            user["language_code"] = self.language_code
        if self.username:
            user["username"] = self.username
        return user

    def chat(self) -> dict[str, Any]:
        return {"id": self.id, "type": "private", "first_name": self.first_name}


def group_chat(chat_id: int = -1001234567890, title: str = "Family") -> dict[str, Any]:
    """A supergroup (Telegram's group chat ids are negative)."""
    return {"id": chat_id, "type": "supergroup", "title": title}


@dataclass
class ApiCall:
    """One request the bot made, with its form fields decoded."""

    method: str
    params: dict[str, Any]
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    result: Any = None
    in_webhook_response: bool = False
    """Made by answering a webhook request with the method, as Telegram allows."""


class HtmlError(ValueError):
    """Markup Telegram would refuse with "can't parse entities"."""


class _TelegramHtmlChecker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            raise HtmlError(f'Unsupported start tag "{tag}"')
        for name, _ in attrs:
            if name not in ALLOWED_TAGS[tag]:
                raise HtmlError(f'Unsupported attribute "{name}" in tag "{tag}"')
        self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise HtmlError(f'Unsupported self-closing tag "{tag}"')

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            raise HtmlError(f'Unmatched end tag "{tag}"')
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data or ">" in data:
            raise HtmlError('Unexpected "<" or ">" in text')
        self.text.append(data)

    def handle_entityref(self, name: str) -> None:
        if name not in NAMED_ENTITIES:
            raise HtmlError(f'Unsupported HTML entity "&{name};"')
        self.text.append(html.unescape(f"&{name};"))

    def handle_charref(self, name: str) -> None:
        self.text.append(html.unescape(f"&#{name};"))

    def handle_comment(self, data: str) -> None:
        raise HtmlError("Comments are not supported")

    def handle_decl(self, decl: str) -> None:
        raise HtmlError("Declarations are not supported")


def check_telegram_html(markup: str) -> str:
    """The visible text of Telegram HTML, or HtmlError where Telegram would refuse it."""
    checker = _TelegramHtmlChecker()
    checker.feed(markup)
    checker.close()
    if checker.rawdata:
        raise HtmlError("Unclosed tag or entity at the end of the text")
    if checker.open:
        raise HtmlError(f'Can\'t find end tag corresponding to start tag "{checker.open[-1]}"')
    return "".join(checker.text)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
