"""Reading Telegram Desktop and ChatGPT exports: authors, roles, times, ids, text, media,
what is skipped and why, and bad input refused in one line."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from core.errors import ExportFormatError
from stores.exports.chatgpt import read_chatgpt
from stores.exports.history import open_export
from stores.exports.telegram import TelegramOptions, read_telegram
from tests.support.exports import (
    T0,
    chatgpt_conversations,
    full_export,
    personal_chat,
    write_json,
)


def telegram(data, **options):
    return read_telegram(io.BytesIO(json.dumps(data).encode()), TelegramOptions(**options))


def by_id(history):
    return {message["external_id"]: message for message in history.messages}


def test_a_full_export_imports_personal_and_bot_chats_with_authors_roles_and_times() -> None:
    history = telegram(full_export())
    assert [chat.name for chat in history.chats] == ["Олег", "Weather bot"]
    messages = by_id(history)
    assert messages["tg:2002:2"] == {
        "external_id": "tg:2002:2",
        "role": "user",
        "content": "Привет! Я купил билеты в Казань на 12 декабря",
        "created_at": "2023-11-14T22:15:20+00:00",
        "author": "Олег",
    }
    assert messages["tg:2002:3"]["content"] == "Отлично, возьми тёплую куртку, там -15"
    assert messages["tg:2002:3"]["author"] == "Анна Петрова"
    assert messages["tg:2002:4"]["content"] == "Поезд отходит с Казанского вокзала в 23:40"
    assert messages["tg:2002:5"]["content"] == "[photo]"
    assert messages["tg:2002:6"]["content"] == "[voice message, 7 s]"
    assert messages["tg:2002:7"]["content"] == "[sticker 👍]"
    assert messages["tg:2002:8"]["content"] == "[forwarded from Мама] Мама просила купить ей мёд"
    assert messages["tg:4004:1"]["role"] == "user"
    assert messages["tg:4004:2"]["role"] == "assistant"
    assert history.skipped == {
        "service message": 1,
        "empty": 1,
        "type unsupported_future_type": 1,
        "chat not chosen": 3,
    }
    assert {key: person.names for key, person in history.people.items()} == {"user2002": ["Олег"]}


def test_a_group_is_imported_when_named_and_people_merge_by_id_across_chats() -> None:
    history = telegram(full_export(), chats=["book club", "2002"])
    assert [chat.name for chat in history.chats] == ["Олег", "Book club"]
    messages = by_id(history)
    assert messages["tg:3003:1"]["content"] == "Next meeting we read Dune by Herbert"
    assert messages["tg:3003:2"]["author"] == "Анна Петрова"
    assert sorted(history.people) == ["user2002", "user3001"]
    assert history.people["user2002"].names == ["Олег"]
    assert len({m["external_id"] for m in history.messages}) == len(history.messages)


def test_one_chats_result_json_finds_its_owner_without_personal_information() -> None:
    history = telegram(personal_chat())
    assert [chat.name for chat in history.chats] == ["Олег"]
    assert set(history.people) == {"user2002"}
    assert by_id(history)["tg:2002:3"]["author"] == "Анна Петрова"
    me = telegram(personal_chat(), me="Олег")
    assert set(me.people) == {"user1001"}


def test_chatgpt_imports_the_branch_shown_with_both_roles() -> None:
    history = read_chatgpt(io.BytesIO(json.dumps(chatgpt_conversations()).encode()))
    assert [(c.name, c.messages) for c in history.chats] == [("Sourdough", 3), ("Porto trip", 2)]
    contents = [(m["role"], m["content"]) for m in history.messages]
    assert ("assistant", "Buy yeast.") not in contents
    assert contents[:3] == [
        ("user", "How do I make sourdough starter?"),
        ("assistant", "Mix equal parts rye flour and water; feed daily."),
        ("user", "Спасибо! Назову его Борис."),
    ]
    assert history.messages[0]["external_id"] == "chatgpt:c-1:u1"
    assert history.messages[0]["created_at"] == "2023-07-22T04:26:40+00:00"
    assert history.skipped == {"system message": 1, "tool message": 1}


@pytest.mark.parametrize(
    ("reader", "text", "message"),
    [
        (telegram, "[1, 2]", "not a Telegram Desktop JSON export"),
        (telegram, '{"name": "x", "messages": [{"id": 1', "not a complete JSON export"),
        (telegram, "hello", "not JSON"),
        ("chatgpt", '{"chats": []}', "not a ChatGPT export"),
        ("chatgpt", '[{"title": "x", "mapping": 5}]', "not a ChatGPT export"),
        ("chatgpt", '[{"title": "x", "mapping": {}', "not a complete JSON export"),
    ],
)
def test_bad_exports_are_refused_in_one_line(reader, text: str, message: str) -> None:
    with pytest.raises(ExportFormatError, match=message) as refused:
        if reader == "chatgpt":
            read_chatgpt(io.BytesIO(text.encode()))
        else:
            read_telegram(io.BytesIO(text.encode()))
    assert "\n" not in str(refused.value)


def test_a_zipped_export_is_read_from_its_folder(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("Telegram Desktop/DataExport/result.json", json.dumps(full_export()))
        zipped.writestr("Telegram Desktop/DataExport/photos/photo_1.jpg", b"\xff\xd8")
    with open_export(archive, ("result.json",), 10_000_000) as stream:
        assert len(read_telegram(stream).messages) == 9


def test_zip_slip_bombs_and_oversized_files_are_refused(tmp_path: Path) -> None:
    slip = tmp_path / "slip.zip"
    with zipfile.ZipFile(slip, "w") as zipped:
        zipped.writestr("../../etc/result.json", "{}")
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("result.json", b" " * 5_000_000)
    big = write_json(tmp_path / "result.json", full_export())
    cases = [(slip, "outside its folder"), (bomb, "inflates"), (big, "larger than allowed")]
    for path, message in cases:
        with (
            pytest.raises(ExportFormatError, match=message),
            open_export(path, ("result.json",), 1_000) as stream,
        ):
            read_telegram(stream)


def test_times_follow_date_unixtime_in_utc() -> None:
    history = telegram(personal_chat())
    first = min(message["created_at"] for message in history.messages)
    assert first == "2023-11-14T22:15:20+00:00"
    assert T0 + 120 == 1_700_000_120
