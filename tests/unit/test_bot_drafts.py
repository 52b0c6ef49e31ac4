"""Each draft is valid Telegram HTML, however the Markdown written so far is cut.

A model's answer arrives token by token, so a draft renders Markdown cut anywhere: in a
code block, between the two stars of bold, inside a link or an entity. Every prefix of
answers in Russian and English, and of random Markdown-like text, must render to markup
Telegram accepts (checked by the fake Bot API server's own validator) and fit one message.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.render import draft_html
from bot.splitting import TELEGRAM_LIMIT, utf16_length
from tests.support.bot_api_server import check_telegram_html

ANSWERS = [
    """# Plan for **Lisbon**

Here is what we *agreed*:

1. Fly on **May 3** with `TAP 1234`
2. Stay at _Casa Azul_ — see [the booking](https://example.com/a?b=1&c=2)
- ~~cancelled~~ hotel
> Olga said: "bring <sunscreen> & hats"

```python
def total(a, b):
    return a < b and b > 0
```

Inline `code with **stars**` and ||spoiler|| text. Done!""",
    """Марципан: **хроническая болезнь почек**, вторая стадия. Нужна *диета Renal* и `фонтанчик`.

```
анализы: креатинин 180 мкмоль/л & мочевина <норма>
```
Итого — __важно__ не забывать воду! 🐈‍⬛ [запись](https://vet.example/ru?id=5)""",
]


def test_every_prefix_of_an_answer_is_a_valid_draft():
    for answer in ANSWERS:
        for end in range(1, len(answer) + 1):
            markup = draft_html(answer[:end])
            check_telegram_html(markup)  # raises where Telegram would refuse it


def test_a_rendering_that_crosses_its_tags_is_sent_as_text():
    # The converter closes the quote inside the code span here: <blockquote><code>a</blockquote>
    markup = draft_html("> quote `code\nmore` & <b>")

    assert check_telegram_html(markup) == "quote code\nmore & <b>"


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="*_`~|[]()<>&#>-!\n .:/abcабв1🐈", max_size=120))
def test_random_markdown_like_text_is_a_valid_draft(text: str):
    check_telegram_html(draft_html(text))


def test_a_long_answer_shows_the_part_being_written():
    answer = "\n\n".join(f"Paragraph {index}: " + "some words here " * 20 for index in range(40))

    markup = draft_html(answer)

    visible = check_telegram_html(markup)
    assert utf16_length(markup) <= TELEGRAM_LIMIT
    assert visible.rstrip().endswith("Paragraph 39: " + ("some words here " * 20).rstrip())
