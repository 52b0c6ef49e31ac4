"""A chat export sent as a document becomes memory after one button press.

`result.json` (Telegram Desktop), `conversations.json` (ChatGPT) or a `.zip` holding one
is downloaded and read at once; the bot says what it found and offers an Import button.
The press imports it (`app.imports`), editing the message with progress and then the
result. Pending imports are kept by the pressing user's id, so a button never reaches
another user's file.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aiogram import Bot, F, Router
from aiogram.enums import ChatType
from aiogram.filters.callback_data import CallbackData
from aiogram.types import CallbackQuery, Message
from aiogram.utils.keyboard import InlineKeyboardBuilder

from app.imports import EXPORT_FILES, import_history, read_export
from bot.import_texts import ImportTexts, import_texts
from bot.media import FileTooLarge, download, incoming_file
from bot.texts import Texts
from core.deps import Deps
from core.errors import SessionFormatError
from core.settings import Settings
from stores.exports.history import ImportedHistory

log = logging.getLogger(__name__)

BOT_API_DOWNLOAD_LIMIT = 20 * 1024 * 1024
EDIT_INTERVAL_S = 2.0


class ImportAction(CallbackData, prefix="import"):
    token: str


class PendingImports(dict[tuple[int, str], ImportedHistory]):
    """Exports read and waiting for their owner's press, by (user id, token): one a user,
    the latest sent, so unpressed offers never pile up in memory."""

    def offer(self, user_id: int, history: ImportedHistory) -> str:
        for key in [key for key in self if key[0] == user_id]:
            del self[key]
        token = secrets.token_urlsafe(9)
        self[(user_id, token)] = history
        return token


def is_export(message: Message) -> bool:
    name = (message.document.file_name or "").lower() if message.document else ""
    return name in EXPORT_FILES or name.endswith(".zip")


@dataclass
class _Stage:
    description: str
    total: float | None
    done: float = 0

    def advance(self, steps: float = 1) -> None:
        self.done += steps

    def update(
        self, *, description: str | None = None, total: float | None = None, advance: float = 0
    ) -> None:
        self.description = description or self.description
        self.total = total if total is not None else self.total
        self.done += advance

    def finish(self, *, remove: bool = False) -> None:
        if self.total is not None:
            self.done = self.total


class ChatProgress:
    """The memory pipeline's progress board, read by the loop that edits the message."""

    def __init__(self) -> None:
        self.stage: _Stage | None = None

    def task(self, description: str, total: float | None = None, unit: str = "") -> _Stage:
        self.stage = _Stage(description, total)
        return self.stage

    def line(self, texts: ImportTexts) -> str | None:
        stage = self.stage
        if stage is None or stage.total is None:
            return None
        return texts.progress.format(
            stage=stage.description, done=int(stage.done), total=int(stage.total)
        )


async def offer_import(
    message: Message, bot: Bot, deps: Deps, settings: Settings, texts: Texts,
    pending: PendingImports,
) -> None:  # fmt: skip
    """Read the export now and say what it holds, with the Import button."""
    said, document = import_texts(texts), message.document
    user_id = message.from_user.id  # type: ignore[union-attr]
    name = document.file_name or "export"  # type: ignore[union-attr]
    if (document.file_size or 0) > BOT_API_DOWNLOAD_LIMIT:  # type: ignore[union-attr]
        await message.answer(said.too_big.format(name=name, user_id=user_id))
        return
    try:
        data = await download(bot, incoming_file(message), BOT_API_DOWNLOAD_LIMIT)  # type: ignore[arg-type]
    except FileTooLarge:
        await message.answer(said.too_big.format(name=name, user_id=user_id))
        return
    try:
        history = await asyncio.to_thread(_read, data, name, settings.ingest_max_bytes)
    except SessionFormatError as error:
        not_an_export = name.lower().endswith(".zip") and "not a Telegram or ChatGPT" in str(error)
        await message.answer(
            texts.unsupported_file.format(name=name)
            if not_an_export
            else said.unreadable.format(name=name, reason=str(error))
        )
        return
    token = pending.offer(user_id, history)
    found = history.summary()
    keyboard = InlineKeyboardBuilder()
    keyboard.button(text=said.button, callback_data=ImportAction(token=token))
    await message.answer(
        said.found.format(
            source="Telegram" if history.source == "telegram" else "ChatGPT",
            chats=len(found["chats"]), messages=found["messages"], people=found["people"],
            first=(found["first_at"] or "?")[:10], last=(found["last_at"] or "?")[:10],
        ),
        reply_markup=keyboard.as_markup(),
    )  # fmt: skip


def _read(data: bytes, name: str, max_bytes: int) -> ImportedHistory:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        return read_export(path, max_bytes)


async def run_import(
    query: CallbackQuery, callback_data: ImportAction, deps: Deps, texts: Texts,
    pending: PendingImports,
) -> None:  # fmt: skip
    said = import_texts(texts)
    history = pending.pop((query.from_user.id, callback_data.token), None)
    message = query.message
    if history is None or not isinstance(message, Message):
        await query.answer(said.expired, show_alert=True)
        return
    await query.answer()
    await message.edit_text(said.started.format(messages=len(history.messages)))
    progress = ChatProgress()
    editing = asyncio.create_task(_show_progress(message, progress, said))
    try:
        result = await import_history(deps, history, query.from_user.id, progress=progress)  # type: ignore[arg-type]
    except Exception as error:
        log.exception("an import failed")
        await message.edit_text(said.failed.format(reason=type(error).__name__))
        return
    finally:
        editing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await editing
    await message.edit_text(
        said.done.format(
            new=result["new_messages"], messages=result["messages"],
            topics=len(result["topics"]), people=result["import"]["people_added"],
        )
    )  # fmt: skip


async def _show_progress(message: Message, progress: ChatProgress, said: ImportTexts) -> None:
    shown = None
    while True:
        await asyncio.sleep(EDIT_INTERVAL_S)
        line = progress.line(said)
        if line and line != shown:
            with contextlib.suppress(Exception):
                await message.edit_text(line)
            shown = line


def build_router() -> Router:
    router = Router(name="imports")
    router.message.register(
        offer_import, F.chat.type == ChatType.PRIVATE, F.document, F.func(is_export)
    )
    router.callback_query.register(run_import, ImportAction.filter())
    return router
