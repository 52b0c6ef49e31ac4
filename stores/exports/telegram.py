"""Telegram Desktop's JSON export: one chat's `result.json` or a whole account's.

The file is walked as a stream of JSON events, so only one message is built at a time.
Chats are chosen by name or id (all personal and bot chats by default; groups and
channels only when named). The exporting user's messages and everyone else's are role
`user` with their author's name; a bot's messages in a bot chat are `assistant`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import ijson

from core.errors import ExportFormatError
from core.records import NewMessage
from stores.exports.history import Chat, ImportedHistory, json_error, utc_iso

PERSONAL_TYPES = frozenset({"personal_chat", "bot_chat", "saved_messages"})
FULL_EXPORT = "chats.list.item"

MEDIA_LABELS = {
    "photo": "[photo]",
    "voice": "[voice message, {duration} s]",
    "audio": "[audio: {name}]",
    "document": "[document: {name}]",
}
"""The labels the bot stores for media (its English texts); a reader may be given others."""


@dataclass
class _ChatBuffer:
    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TelegramOptions:
    chats: Collection[str] = ()
    """Names or ids of the chats to import; empty: every personal and bot chat."""
    me: str | None = None
    """The exporting user's name or id, when the export does not say it."""
    labels: dict[str, str] = field(default_factory=lambda: dict(MEDIA_LABELS))


def plain_text(text: Any) -> str:
    """A message's `text`: a string, or a list of strings and entity objects."""
    if isinstance(text, str):
        return text
    if isinstance(text, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in text
            if isinstance(part, str | dict)
        )
    return ""


def media_label(message: dict[str, Any], labels: dict[str, str]) -> str:
    media_type = message.get("media_type")
    name = message.get("file_name") or message.get("title") or "file"
    if "photo" in message:
        return labels["photo"]
    if media_type == "voice_message":
        return labels["voice"].format(duration=message.get("duration_seconds", 0))
    if media_type == "sticker":
        return f"[sticker {message.get('sticker_emoji') or ''}]".replace(" ]", "]")
    if media_type == "audio_file":
        return labels["audio"].format(name=name)
    if media_type:
        return {"video_file": "[video]", "video_message": "[video_note]"}.get(
            media_type, f"[{media_type}]"
        )
    if "file" in message:
        return labels["document"].format(name=name)
    return ""


class _Reader:
    def __init__(self, options: TelegramOptions) -> None:
        self.options = options
        self.history = ImportedHistory("telegram")
        self.me_id: str | None = None
        self.me_name: str | None = None
        self.wanted = {str(choice).strip().casefold() for choice in options.chats}

    def chosen(self, chat: Chat, single: bool) -> bool:
        if self.wanted:
            return chat.name.casefold() in self.wanted or chat.id in self.wanted
        return single or chat.type in PERSONAL_TYPES

    def is_me(self, from_id: str, name: str, chat: Chat) -> bool:
        if self.options.me is not None:
            me = self.options.me.strip().casefold()
            return me in {from_id.casefold(), from_id.removeprefix("user"), name.casefold()}
        if self.me_id is not None:
            return from_id == self.me_id
        # One chat's export does not name its owner: in a private chat the other side's
        # user id is the chat's id.
        return chat.type in PERSONAL_TYPES and from_id != f"user{chat.id}"

    def add_chat(self, buffer: _ChatBuffer, single: bool) -> None:
        meta = buffer.meta
        chat = Chat(str(meta.get("id", "")), str(meta.get("name") or ""), str(meta.get("type", "")))
        if not self.chosen(chat, single):
            self.history.skipped["chat not chosen"] += len(buffer.messages)
            return
        self.history.chats.append(chat)
        for raw in buffer.messages:
            message = self.message(raw, chat)
            if message is not None:
                self.history.messages.append(message)
                chat.messages += 1

    def message(self, raw: dict[str, Any], chat: Chat) -> NewMessage | None:
        skipped = self.history.skipped
        kind = raw.get("type")
        if kind != "message":
            skipped["service message" if kind == "service" else f"type {kind}"] += 1
            return None
        if "id" not in raw or not (raw.get("date_unixtime") or raw.get("date")):
            skipped["no id or date"] += 1
            return None
        text = plain_text(raw.get("text"))
        label = media_label(raw, self.options.labels)
        if raw.get("forwarded_from"):
            label = f"[forwarded from {raw['forwarded_from']}] {label}".strip()
        content = f"{label} {text}".strip() if label else text
        if not content.strip():
            skipped["empty"] += 1
            return None
        from_id = str(raw.get("from_id") or "")
        name = str(raw.get("from") or "")
        mine = self.is_me(from_id, name, chat)
        bot_reply = chat.type == "bot_chat" and not mine
        if not mine and not bot_reply and from_id:
            self.history.meet(from_id, name)
        created = utc_iso(raw["date_unixtime"]) if raw.get("date_unixtime") else str(raw["date"])
        return NewMessage(
            external_id=f"tg:{chat.id}:{raw['id']}",
            role="assistant" if bot_reply else "user",
            content=content,
            created_at=created,
            author=(self.me_name or name or None) if mine else (name or None),
        )

    def personal(self, key: str, value: Any) -> None:
        if key == "user_id":
            self.me_id = f"user{value}"
        elif key == "first_name" and value:
            self.me_name = str(value)
        elif key == "last_name" and value and self.me_name:
            self.me_name = f"{self.me_name} {value}"


def _events(stream) -> Iterable[tuple[str, str, Any]]:  # type: ignore[no-untyped-def]
    try:
        yield from ijson.parse(stream)
    except ijson.JSONError as error:
        raise json_error(error) from None


def read_telegram(stream, options: TelegramOptions | None = None) -> ImportedHistory:  # type: ignore[no-untyped-def]
    """The chosen chats of a Telegram Desktop JSON export read from `stream`: one chat's
    `result.json` (its keys at the top) or an account's (`chats.list`)."""
    reader = _Reader(options or TelegramOptions())
    top, chat = _ChatBuffer(), None
    builder: ijson.ObjectBuilder | None = None
    target, item = top, ""
    top_keys: set[str] = set()
    for prefix, event, value in _events(stream):
        if builder is not None:
            builder.event(event, value)
            if prefix == item and event == "end_map":
                target.messages.append(builder.value)
                builder = None
            continue
        scalar = event in {"string", "number"}
        if prefix == "" and event == "map_key":
            top_keys.add(value)
        elif prefix.startswith("personal_information.") and scalar:
            reader.personal(prefix.rsplit(".", 1)[1], value)
        elif prefix == FULL_EXPORT and event == "start_map":
            chat = _ChatBuffer()
        elif prefix == FULL_EXPORT and event == "end_map" and chat is not None:
            reader.add_chat(chat, single=False)
            chat = None
        elif scalar and prefix in CHAT_KEYS:
            top.meta[prefix] = value
        elif scalar and chat is not None and prefix in FULL_CHAT_KEYS:
            chat.meta[prefix.rsplit(".", 1)[1]] = value
        elif event == "start_map" and prefix in {"messages.item", f"{FULL_EXPORT}.messages.item"}:
            target = top if prefix == "messages.item" else chat or _ChatBuffer()
            item, builder = prefix, ijson.ObjectBuilder()
            builder.event(event, value)
    if "messages" in top_keys:
        reader.add_chat(top, single=True)
    elif "chats" not in top_keys:
        raise ExportFormatError(
            'not a Telegram Desktop JSON export (no "messages" or "chats" in it)'
        )
    return reader.history


CHAT_KEYS = frozenset({"name", "type", "id"})
FULL_CHAT_KEYS = frozenset(f"{FULL_EXPORT}.{key}" for key in CHAT_KEYS)
