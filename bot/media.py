"""Media of a message group: what is stored on arrival, and what the turn receives.

On arrival a message is stored as its text, or as a short description of its
media plus the caption ("[photo] caption"), so it is saved before anything is
downloaded. When the group's turn runs, files are downloaded in parallel
(retried with backoff) and turned into what the turn reads (seed 002) and what
memory keeps (`app.media`):

| kind | the turn reads | memory keeps |
|---|---|---|
| photo, image document | an image part (base64) | the label and the describer's description |
| voice, audio | an audio part (base64) | the label and the transcript |
| PDF | its text (pypdf in a bounded worker process) | the text in passages, with its file name |
| text document | its text, inline up to `max_document_chars` | the same text in passages |

A file over `max_file_bytes`, of an unsupported kind, unreadable or failing
to download gets a clear reply of its own; the rest of the group goes on.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from aiogram import Bot
from aiogram.types import Message

from app.reading import DocumentUnreadable, ReadLimits, read_document
from bot.retry import with_backoff
from bot.texts import Texts
from core.metrics import FILE_DOWNLOAD

log = logging.getLogger(__name__)

Kind = Literal["image", "audio", "pdf", "text", "unsupported"]

TEXT_SUFFIXES = {
    ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".jsonl", ".xml", ".yaml", ".yml",
    ".toml", ".ini", ".cfg", ".log", ".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".h",
    ".cpp", ".sql", ".sh", ".html", ".css", ".srt", ".tex", ".rst",
}  # fmt: skip
TEXT_MIME_TYPES = {"application/json", "application/xml", "application/x-yaml", "application/sql"}
IMAGE_MIME_TYPES = {"image/jpeg", "image/png", "image/webp", "image/gif"}


@dataclass(frozen=True)
class IncomingFile:
    kind: Kind
    file_id: str
    name: str
    mime_type: str
    size: int | None
    message: Message


@dataclass
class PreparedGroup:
    """A closed group as the turn reads it."""

    text: str
    usable: bool = False
    """Anything to answer: text, a caption, a sticker, a readable file."""
    parts: list[dict[str, Any]] = field(default_factory=list)
    """Photos as content blocks for the responder; never audio, which a text model cannot
    take: a voice reaches it as its transcript, or as its label if nobody transcribed it."""
    problems: list[tuple[Message, str]] = field(default_factory=list)
    """(message, reply) for files that could not be used."""
    documents: list[tuple[IncomingFile, str]] = field(default_factory=list)
    """Documents read, with their text (capped at `max_document_chars`): kept as memory."""
    media: list[tuple[IncomingFile, bytes]] = field(default_factory=list)
    """Voice, audio and photos downloaded: transcribed or described for memory."""
    blocks: dict[int, str] = field(default_factory=dict)
    """Each message's part of `text`, by Telegram message id."""

    def add_text(self, message_id: int, text: str) -> None:
        """What a message's media said or showed joins its block in the turn's text."""
        if message_id in self.blocks and text:
            label, _, rest = self.blocks[message_id].partition("\n")
            self.blocks[message_id] = f"{label} {text}" + (f"\n{rest}" if rest else "")
            self.text = "\n\n".join(self.blocks.values())


def _document_kind(name: str, mime_type: str) -> Kind:
    suffix = PurePosixPath(name.lower()).suffix
    if mime_type == "application/pdf" or suffix == ".pdf":
        return "pdf"
    if mime_type in IMAGE_MIME_TYPES:
        return "image"
    if mime_type.startswith("audio/"):
        return "audio"
    if mime_type.startswith("text/") or mime_type in TEXT_MIME_TYPES or suffix in TEXT_SUFFIXES:
        return "text"
    return "unsupported"


def incoming_file(message: Message) -> IncomingFile | None:
    """The file a message carries, if any (the largest photo size for photos)."""
    if message.photo:
        photo = message.photo[-1]
        return IncomingFile(
            "image", photo.file_id, "photo.jpg", "image/jpeg", photo.file_size, message
        )
    if message.voice:
        voice = message.voice
        return IncomingFile(
            "audio", voice.file_id, "voice.ogg", voice.mime_type or "audio/ogg",
            voice.file_size, message,
        )  # fmt: skip
    if message.audio:
        audio = message.audio
        name = audio.file_name or audio.title or "audio"
        return IncomingFile(
            "audio", audio.file_id, name, audio.mime_type or "audio/mpeg", audio.file_size, message
        )
    if message.document:
        document = message.document
        name = document.file_name or "document"
        mime_type = document.mime_type or "application/octet-stream"
        return IncomingFile(
            _document_kind(name, mime_type), document.file_id, name, mime_type,
            document.file_size, message,
        )  # fmt: skip
    for kind in ("video", "video_note", "animation"):
        media = getattr(message, kind)
        if media is not None:
            name = getattr(media, "file_name", None) or kind.replace("_", " ")
            return IncomingFile(
                "unsupported", media.file_id, name, getattr(media, "mime_type", None) or "",
                media.file_size, message,
            )  # fmt: skip
    return None


def describe(message: Message, texts: Texts) -> str:
    """The message as stored on arrival: its text, or its media described plus the caption."""
    if message.text:
        return message.text
    label = _label(message, texts)
    caption = message.caption or ""
    return f"{label} {caption}".strip() if label else caption


def _label(message: Message, texts: Texts) -> str:
    if message.photo:
        return texts.photo
    if message.voice:
        return texts.voice.format(duration=message.voice.duration)
    if message.sticker:
        return f"[sticker {message.sticker.emoji or ''}]".replace(" ]", "]")
    file = incoming_file(message)
    if file is None:
        return f"[{message.content_type}]"
    if file.kind == "audio":
        return texts.audio.format(name=file.name)
    return texts.document.format(name=file.name)


class FileTooLarge(Exception):
    """A download that grew past its cap, whatever size the server declared."""


class CappedBuffer(io.BytesIO):
    """A download's bytes, refused past `cap`: the stream stops there."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.cap:
            raise FileTooLarge(f"over {self.cap} bytes")
        return super().write(data)


async def download(bot: Bot, file: IncomingFile, cap: int) -> bytes:
    """The file's bytes, at most `cap` of them (`FileTooLarge` past it)."""
    telegram_file = await bot.get_file(file.file_id)
    if telegram_file.file_path is None:
        raise FileNotFoundError(file.name)

    async def fetch() -> bytes:
        buffer = CappedBuffer(cap)
        await bot.download_file(telegram_file.file_path, buffer)
        return buffer.getvalue()

    return await with_backoff(fetch, what=f"download of {file.name}")


def too_large(texts: Texts, file: IncomingFile, max_file_bytes: int) -> str:
    return texts.file_too_large.format(name=file.name, limit_mb=max_file_bytes // (1024 * 1024))


def unreadable_reply(texts: Texts, name: str, error: DocumentUnreadable) -> str:
    replies = {
        "too_complex": texts.document_too_complex,
        "encrypted": texts.document_encrypted,
        "binary": texts.document_binary,
    }
    return replies.get(error.reason, texts.unsupported_file).format(name=name)


async def prepare_group(
    bot: Bot,
    messages: list[Message],
    texts: Texts,
    *,
    max_file_bytes: int,
    max_document_chars: int,
    read_limits: ReadLimits | None = None,
) -> PreparedGroup:
    """The group's text (documents inlined) and media parts, downloads in parallel;
    documents read within `read_limits` (`app.reading`)."""
    read_limits = read_limits or ReadLimits(max_chars=max_document_chars)
    prepared = PreparedGroup(text="")
    files = [file for message in messages if (file := incoming_file(message)) is not None]
    usable = []
    for file in files:
        if file.kind == "unsupported":
            prepared.problems.append((file.message, texts.unsupported_file.format(name=file.name)))
        elif file.size is not None and file.size > max_file_bytes:
            prepared.problems.append((file.message, too_large(texts, file, max_file_bytes)))
        else:
            usable.append(file)
    started = time.perf_counter()
    downloads = await asyncio.gather(
        *(download(bot, file, max_file_bytes) for file in usable), return_exceptions=True
    )
    if usable:
        FILE_DOWNLOAD.observe(time.perf_counter() - started)
    inlined: dict[int, str] = {}
    for file, data in zip(usable, downloads, strict=True):
        if isinstance(data, FileTooLarge):
            prepared.problems.append((file.message, too_large(texts, file, max_file_bytes)))
            continue
        if isinstance(data, BaseException):
            log.warning("download of %s failed: %r", file.name, data)
            prepared.problems.append((file.message, texts.download_failed.format(name=file.name)))
            continue
        if file.kind == "audio":  # the responder reads its transcript or its label
            prepared.media.append((file, data))
            continue
        if file.kind == "image":
            prepared.media.append((file, data))
            prepared.parts.append(
                {
                    "type": file.kind,
                    "base64": base64.b64encode(data).decode("ascii"),
                    "mime_type": file.mime_type,
                }
            )
            continue
        try:
            content = await read_document(data, file.kind, read_limits)
        except DocumentUnreadable as error:
            log.warning("could not read %s: %s", file.name, error)
            prepared.problems.append((file.message, unreadable_reply(texts, file.name, error)))
            continue
        prepared.documents.append((file, content[:max_document_chars]))
        if len(content) > max_document_chars:
            content = (
                content[:max_document_chars]
                + "\n"
                + texts.truncated.format(limit=max_document_chars)
            )
        inlined[file.message.message_id] = (
            f'<document name="{file.name}">\n{content.strip()}\n</document>'
        )
    for message in messages:
        block = describe(message, texts)
        if message.message_id in inlined:
            block = f"{block}\n{inlined[message.message_id]}"
        if block:
            prepared.blocks[message.message_id] = block
    prepared.text = "\n\n".join(prepared.blocks.values())
    prepared.usable = bool(
        prepared.media
        or inlined
        or any(message.text or message.caption or message.sticker for message in messages)
    )
    return prepared
