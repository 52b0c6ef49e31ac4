"""Chat exports shaped like the real ones (Telegram Desktop JSON, ChatGPT's data export),
built by the tests: entity lists, service messages, media, replies, forwards, edits, a
group, a bot chat, Russian and English."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ME = {"user_id": 1001, "first_name": "Анна", "last_name": "Петрова", "phone_number": "+7"}
T0 = 1_700_000_000  # 2023-11-14T22:13:20Z


def tg_message(number: int, sender: str, sender_id: str, text: Any, **extra: Any) -> dict:
    stamp = T0 + number * 60
    return {
        "id": number,
        "type": "message",
        "date": "2023-11-14T22:13:20",
        "date_unixtime": str(stamp),
        "from": sender,
        "from_id": sender_id,
        "text": text,
        "text_entities": [],
        **extra,
    }


def tg_chat(name: str, kind: str, chat_id: int, messages: list[dict]) -> dict:
    """One chat of a Telegram export: its name, type (`personal_chat`, `private_group`,
    `bot_chat`), id and messages."""
    return {"name": name, "type": kind, "id": chat_id, "messages": messages}


def personal_chat() -> dict:
    """Anna and her brother Oleg, in Russian: entities, a reply, an edit, media, a forward."""
    anna, oleg = ("Анна Петрова", "user1001"), ("Олег", "user2002")
    messages = [
        {
            "id": 1,
            "type": "service",
            "date": "2023-11-14T22:00:00",
            "date_unixtime": str(T0 - 800),
            "actor": "Олег",
            "actor_id": "user2002",
            "action": "phone_call",
            "text": "",
        },
        tg_message(2, *oleg, "Привет! Я купил билеты в Казань на 12 декабря"),
        tg_message(
            3,
            *anna,
            [
                "Отлично, ",
                {"type": "bold", "text": "возьми"},
                " тёплую куртку, там ",
                {"type": "link", "text": "-15"},
            ],
            reply_to_message_id=2,
        ),
        tg_message(
            4,
            *oleg,
            "Поезд отходит с Казанского вокзала в 23:40",
            edited="2023-11-14T22:20:00",
            edited_unixtime=str(T0 + 400),
        ),
        tg_message(5, *anna, "", photo="photos/photo_1.jpg", width=800, height=600),
        tg_message(
            6,
            *oleg,
            "",
            file="voice_messages/audio_1.ogg",
            media_type="voice_message",
            mime_type="audio/ogg",
            duration_seconds=7,
        ),
        tg_message(
            7, *oleg, "", file="stickers/sticker.webp", media_type="sticker", sticker_emoji="👍"
        ),
        tg_message(8, *anna, "Мама просила купить ей мёд", forwarded_from="Мама"),
        tg_message(9, *anna, "", new_unknown_field={"x": 1}),
        {"id": 10, "type": "unsupported_future_type", "date": "2023-11-14T22:30:00"},
    ]
    return tg_chat("Олег", "personal_chat", 2002, messages)


def group_chat() -> dict:
    """A book club in English, with a mention entity; imported only when named."""
    messages = [
        tg_message(
            1,
            "Mark Twen",
            "user3001",
            ["Next meeting we read ", {"type": "italic", "text": "Dune"}, " by Herbert"],
        ),
        tg_message(
            2,
            "Анна Петрова",
            "user1001",
            ["Sounds good ", {"type": "mention", "text": "@mark"}],
        ),
        tg_message(3, "Олег", "user2002", "I'll bring the coffee"),
    ]
    return tg_chat("Book club", "private_group", 3003, messages)


def bot_chat() -> dict:
    messages = [
        tg_message(1, "Анна Петрова", "user1001", "weather in Lisbon"),
        tg_message(2, "Weather bot", "user4004", "Lisbon: sunny, 21 °C"),
    ]
    return tg_chat("Weather bot", "bot_chat", 4004, messages)


def full_export() -> dict:
    return {
        "about": "Here is the data you requested.",
        "personal_information": ME,
        "chats": {"about": "", "list": [personal_chat(), group_chat(), bot_chat()]},
    }


def chatgpt_conversations() -> list[dict]:
    """Two conversations; the first was regenerated, so its tree has two branches."""

    def node(node_id, parent, role, text, stamp, children=(), content_type="text"):
        message = None
        if role:
            message = {
                "id": node_id,
                "author": {"role": role},
                "create_time": stamp,
                "content": {"content_type": content_type, "parts": [text]},
            }
        return node_id, {
            "id": node_id,
            "message": message,
            "parent": parent,
            "children": list(children),
        }

    first = dict(
        [
            node("root", None, None, "", None, ["sys"]),
            node("sys", "root", "system", "You are ChatGPT", None, ["u1"]),
            node(
                "u1",
                "sys",
                "user",
                "How do I make sourdough starter?",
                1_690_000_000.5,
                ["old", "new"],
            ),
            node("old", "u1", "assistant", "Buy yeast.", 1_690_000_010.0),
            node(
                "new",
                "u1",
                "assistant",
                "Mix equal parts rye flour and water; feed daily.",
                1_690_000_020.0,
                ["u2"],
            ),
            node("u2", "new", "user", "Спасибо! Назову его Борис.", 1_690_000_100.0, ["tool"]),
            node("tool", "u2", "tool", "search results", 1_690_000_101.0),
        ]
    )
    second = dict(
        [
            node("r2", None, None, "", None, ["a"]),
            node("a", "r2", "user", "Plan a trip to Porto in May", 1_695_000_000.0, ["b"]),
            node("b", "a", "assistant", "Day 1: Ribeira; day 2: Livraria Lello.", 1_695_000_050.0),
        ]
    )
    return [
        {
            "title": "Sourdough",
            "create_time": 1_690_000_000.0,
            "mapping": first,
            "current_node": "tool",
            "conversation_id": "c-1",
            "id": "c-1",
        },
        {
            "title": "Porto trip",
            "create_time": 1_695_000_000.0,
            "mapping": second,
            "current_node": "b",
            "conversation_id": "c-2",
            "id": "c-2",
        },
    ]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path
