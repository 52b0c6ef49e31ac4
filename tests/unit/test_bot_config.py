"""Bot settings from the environment, the user's language, and what is stored on arrival."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from bot.texts import ENGLISH, RUSSIAN, texts_for
from core.settings import Settings

if TYPE_CHECKING:
    from aiogram.types import Message

# aiogram's types take seconds to build: they load when a test runs, not at collection, and
# this file's tests all run on one xdist worker (`ONE_WORKER` in tests/conftest.py).


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", []), ("42", [42]), ("1, 22,333", [1, 22, 333]), ("7,", [7])],
)
def test_allowed_user_ids_are_comma_separated(monkeypatch, value: str, expected: list[int]):
    monkeypatch.setenv("TOPICA_ALLOWED_USER_IDS", value)
    assert Settings(_env_file=None).allowed_user_ids == expected


def test_bot_defaults(monkeypatch) -> None:
    settings = Settings(_env_file=None)
    assert settings.telegram_token is None
    assert settings.telegram_api_url == "https://api.telegram.org"
    assert settings.allowed_user_ids == []
    assert settings.turn_wait_s == 2.0
    assert settings.webhook_url is None
    monkeypatch.setenv("TOPICA_TELEGRAM_TOKEN", "123:abc")
    token = Settings(_env_file=None).telegram_token
    assert token is not None and token.get_secret_value() == "123:abc"
    assert "123:abc" not in repr(Settings(_env_file=None))


@pytest.mark.parametrize(
    ("code", "texts"),
    [("ru", RUSSIAN), ("ru-RU", RUSSIAN), ("uk", RUSSIAN), ("en", ENGLISH), ("de", ENGLISH)],
)
def test_language_follows_telegram_language_code(code: str, texts) -> None:
    assert texts_for(code) is texts


def test_unknown_language_is_english() -> None:
    assert texts_for(None) is ENGLISH


def test_every_text_exists_in_both_languages() -> None:
    for name in ENGLISH.__dataclass_fields__:
        assert getattr(ENGLISH, name) and getattr(RUSSIAN, name), name
    assert [name for name, _ in ENGLISH.commands()] == [name for name, _ in RUSSIAN.commands()]


def message(**content) -> Message:
    from aiogram.types import Chat, Message

    return Message(message_id=1, date=datetime.now(UTC), chat=Chat(id=1, type="private"), **content)


def test_what_is_stored_on_arrival() -> None:
    from aiogram.types import Document, PhotoSize, Voice

    from bot.media import describe

    assert describe(message(text="hello"), ENGLISH) == "hello"
    photo = [PhotoSize(file_id="p", file_unique_id="p", width=1, height=1, file_size=10)]
    assert describe(message(photo=photo, caption="sea"), RUSSIAN) == "[фото] sea"
    voice = Voice(file_id="v", file_unique_id="v", duration=7)
    assert describe(message(voice=voice), ENGLISH) == "[voice message, 7 s]"
    pdf = Document(file_id="d", file_unique_id="d", file_name="a.pdf", mime_type="application/pdf")
    assert describe(message(document=pdf), ENGLISH) == "[document: a.pdf]"


@pytest.mark.parametrize(
    ("name", "mime_type", "kind"),
    [
        ("a.pdf", "application/pdf", "pdf"),
        ("scan.PDF", "application/octet-stream", "pdf"),
        ("notes.md", "application/octet-stream", "text"),
        ("data.json", "application/json", "text"),
        ("page.txt", "text/plain", "text"),
        ("pic.png", "image/png", "image"),
        ("song.mp3", "audio/mpeg", "audio"),
        ("archive.zip", "application/zip", "unsupported"),
    ],
)
def test_document_kinds(name: str, mime_type: str, kind: str) -> None:
    from aiogram.types import Document

    from bot.media import incoming_file

    document = Document(file_id="d", file_unique_id="d", file_name=name, mime_type=mime_type)
    file = incoming_file(message(document=document))
    assert file is not None and file.kind == kind
