"""Splitting answers under Telegram's 4096 UTF-16 limit, and rendering Markdown to its HTML."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render import html_to_plain, markdown_to_html
from bot.splitting import split_message, utf16_length
from tests.support.bot_api_server import HtmlError, check_telegram_html

WORDS = st.sampled_from(
    ["привет", "word", "😀", "🚋🚋", "a<b", "x&y", "tab\t", "end.", "why?", "\n", "\n\n", "  "]
)
TEXT = st.lists(WORDS, min_size=1, max_size=60).map(" ".join)


def escaped_text() -> st.SearchStrategy[str]:
    return TEXT.map(lambda text: html.escape(text, quote=False))


def telegram_html() -> st.SearchStrategy[str]:
    tags = st.sampled_from(["b", "i", "u", "s", "code", "tg-spoiler", "blockquote"])
    return st.recursive(
        escaped_text(),
        lambda inner: st.one_of(
            st.tuples(tags, inner).map(lambda pair: f"<{pair[0]}>{pair[1]}</{pair[0]}>"),
            inner.map(lambda body: f'<a href="https://example.com/?a=1&amp;b=2">{body}</a>'),
            st.lists(inner, min_size=2, max_size=5).map("".join),
        ),
        max_leaves=40,
    )


def squeezed(text: str) -> str:
    return "".join(text.split())


@settings(max_examples=150, deadline=None)
@given(markup=st.lists(telegram_html(), min_size=1, max_size=8).map("\n\n".join))
def test_html_parts_are_valid_short_and_keep_all_text(markup: str) -> None:
    limit = 512
    parts = split_message(markup, limit=limit, html=True)
    for part in parts:
        assert utf16_length(part) <= limit
        check_telegram_html(part)
    shown = "".join(check_telegram_html(part) for part in parts)
    assert squeezed(shown) == squeezed(check_telegram_html(markup))


def test_no_cut_inside_a_tag_after_an_entity_in_its_attribute() -> None:
    # Found by the property above: `&amp;` inside `href` once made the rest of the tag
    # look cuttable, and a part ended in the middle of `<a href="...">`.
    link = '<a href="https://example.com/?a=1&amp;b=2">'
    markup = "\n\n".join(
        [
            " ".join(["привет"] * 10),
            link * 3 + "привет" + "</a>" * 3,
            link * 6 + " ".join(["привет"] * 15) + "</a>" * 6,
            link * 4 + "привет" + "</a>" * 4,
        ]
    )
    parts = split_message(markup, limit=512, html=True)
    assert len(parts) == 3
    for part in parts:
        assert utf16_length(part) <= 512
        check_telegram_html(part)
    shown = "".join(check_telegram_html(part) for part in parts)
    assert squeezed(shown) == squeezed(check_telegram_html(markup))


@settings(max_examples=100, deadline=None)
@given(text=TEXT, repeat=st.integers(1, 40))
def test_plain_parts_are_short_and_keep_all_text(text: str, repeat: int) -> None:
    long_text = " ".join([text] * repeat)
    parts = split_message(long_text, limit=300)
    assert all(utf16_length(part) <= 300 for part in parts)
    assert squeezed("".join(parts)) == squeezed(long_text)


def test_a_short_message_is_one_part() -> None:
    assert split_message("  hello  ") == ["hello"]
    assert split_message("   ") == []


def test_emoji_count_twice() -> None:
    parts = split_message("😀" * 5000)
    assert [utf16_length(part) for part in parts] == [4096, 4096, 1808]
    assert [len(part) for part in parts] == [2048, 2048, 904]


def test_cuts_prefer_paragraphs_then_lines_then_sentences() -> None:
    paragraph = "First sentence here. Second sentence follows. " * 20
    text = f"{paragraph}\n\n{paragraph}\n\n{paragraph}"
    parts = split_message(text, limit=1500)
    assert parts == [paragraph.strip(), paragraph.strip(), paragraph.strip()]
    lines = "\n".join(f"line {index} " + "x" * 50 for index in range(100))
    assert all(part.startswith("line ") for part in split_message(lines, limit=1000))
    sentences = "This is a sentence of some length. " * 100
    assert all(part.endswith(".") for part in split_message(sentences, limit=500))


def test_tags_are_closed_and_reopened_across_a_cut() -> None:
    markup = "<b>" + "bold words " * 100 + "</b>"
    parts = split_message(markup, limit=300, html=True)
    assert len(parts) > 3
    assert all(part.startswith("<b>") and part.endswith("</b>") for part in parts)
    pre = '<pre><code class="language-python">' + "x = 1 &lt; 2\n" * 100 + "</code></pre>"
    for part in split_message(pre, limit=400, html=True):
        assert part.startswith('<pre><code class="language-python">')
        assert part.endswith("</code></pre>")
        check_telegram_html(part)


def test_never_cut_inside_an_entity_or_a_tag() -> None:
    markup = '<a href="https://example.com/a-very-long-path">' + "&amp;" * 300 + "</a>"
    for part in split_message(markup, limit=500, html=True):
        check_telegram_html(part)


LLM_MARKDOWN = [
    "# Plan\n\n1. **Book** the flight\n2. Pack *light*\n\n> Don't forget the passport!",
    "Use `a < b && c > d` in code, or:\n\n```python\nif a < b and c > d:\n    print('ok')\n```",
    "| city | days |\n|---|---|\n| Lisbon | 3 |\n| Porto | 2 |",
    "Links: [docs](https://example.com/search?q=a&lang=ru) and <https://example.com>",
    "Нормальный **жирный** и _курсив_, а также ~~зачёркнутый~~ текст. 😀",
    "Nested **bold with *italic* inside** and ||spoiler||.",
    "- item one\n  - nested item\n- item two with `code`\n\n---\n\nEnd & <done>",
]


@pytest.mark.parametrize("markdown", LLM_MARKDOWN)
def test_typical_llm_markdown_renders_to_html_telegram_accepts(markdown: str) -> None:
    rendered = markdown_to_html(markdown)
    try:
        check_telegram_html(rendered)
    except HtmlError as error:
        pytest.fail(f"{error}: {rendered!r}")


def test_render_escapes_and_formats() -> None:
    rendered = markdown_to_html("**Bold** & `x<y`")
    assert rendered == "<b>Bold</b> &amp; <code>x&lt;y</code>"
    assert html_to_plain(rendered) == "Bold & x<y"


def test_plain_text_of_broken_html_keeps_the_words() -> None:
    assert html_to_plain("<b>unclosed <i>tags &amp; all") == "unclosed tags & all"
