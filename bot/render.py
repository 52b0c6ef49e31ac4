"""The answer's Markdown as Telegram HTML, and HTML back to plain text.

Rendering uses `chatgpt-md-converter`, a maintained converter written for
exactly this (LLM Markdown → the HTML subset Telegram accepts: bold, italic,
code, pre with language, links, quotes, spoilers; lists become bullets, headings
bold, and `<`, `>`, `&` in the text are escaped). Telegram may still refuse a
rendering; the sender then falls back to `html_to_plain`.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from chatgpt_md_converter import telegram_format

from bot.splitting import split_message


def markdown_to_html(markdown: str) -> str:
    return telegram_format(markdown).strip()


def escape(value: object) -> str:
    """A value for Telegram HTML text."""
    return html.escape(str(value), quote=False)


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


class _NestingCheck(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.misnested = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.misnested = True


def well_nested(markup: str) -> bool:
    """Whether every tag closes in order and none is left open (the converter can cross
    them: an inline code span running over a quote's line end closes the quote first)."""
    check = _NestingCheck()
    check.feed(markup)
    check.close()
    return not (check.misnested or check.open or check.rawdata)


def html_to_plain(markup: str) -> str:
    """The visible text of (possibly malformed) HTML: tags dropped, entities decoded."""
    extractor = _TextExtractor()
    extractor.feed(markup)
    extractor.close()
    text = "".join(extractor.parts)
    if extractor.rawdata:
        text += extractor.rawdata
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def draft_html(markdown: str) -> str:
    """The answer so far as one draft's HTML: rendered (as escaped text where the rendering
    is not well nested), and its last part if it is long; empty while the Markdown so far
    renders to nothing, such as a lone `**`."""
    html = markdown_to_html(markdown)
    if not well_nested(html):
        html = escape(html_to_plain(html))
    parts = split_message(html, html=True)
    return parts[-1] if parts else ""
