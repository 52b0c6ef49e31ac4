"""A fake Telegram Bot API server on 127.0.0.1 for end-to-end bot tests.

Why this exists: aiogram talks HTTP to a Bot API server; pointing it at a real
server on loopback (through `TelegramAPIServer.from_base`) exercises the
bot's real request path: multipart forms, long polling with offsets, error
mapping (400 parse errors, 429 retry_after, 5xx), file download URLs.

It keeps a Telegram-like world: private chats whose id is the user's id,
message ids counted per chat, updates confirmed by `offset`. Like Telegram,
`sendMessage` with `parse_mode=HTML` validates the markup (allowed tags,
nesting, entities) and the length of the visible text (4096 UTF-16 code
units) and answers 400 otherwise; `reject_html = True` makes it refuse every
HTML message, as Telegram does for markup it cannot parse.

`sendMessageDraft` (a partial message streamed into a private chat) is checked the
same way; `drafts_supported = False` makes the server answer it as an older Bot API
server does ("method not found"), and Telegram refuses drafts outside private chats.
`stop_generation` plays the user pressing a draft's stop button; `send_text(...,
chat=group_chat())` a message in a group.

Usage::

    async with FakeBotAPI() as api:
        bot = Bot(api.token, session=AiohttpSession(
            api=TelegramAPIServer.from_base(api.base_url, is_local=False)))
        api.send_text(user, "hello")
        [reply] = await api.wait_for_sent(chat_id=user.id, count=1)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from bench.llm_server import serve_on_loopback
from tests.support.bot_api_methods import BotApiMethods
from tests.support.bot_api_world import (
    ApiCall,
    FakeUser,
    HtmlError,
    check_telegram_html,
    group_chat,
    utf16_length,
)

__all__ = [
    "ApiCall",
    "FakeBotAPI",
    "FakeUser",
    "HtmlError",
    "check_telegram_html",
    "group_chat",
    "utf16_length",
]


@dataclass
class _File:
    file_id: str
    path: str
    data: bytes
    declared_size: int


class FakeBotAPI(BotApiMethods):
    """The Bot API subset Topica uses, plus helpers to play the user's side."""

    def __init__(
        self, token: str = "123456:TEST-TOKEN", *, bot_username: str = "topica_test_bot"
    ) -> None:
        self.token = token
        self.bot_user = {
            "id": int(token.split(":")[0]),
            "is_bot": True,
            "first_name": "Topica",
            "username": bot_username,
            "can_join_groups": False,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.calls: list[ApiCall] = []
        self.reject_html = False
        self.drafts_supported = True
        self.webhook_url: str | None = None
        self.menu_button: dict[str, Any] | None = None
        self.webhook_secret: str | None = None
        self.webhook_statuses: list[int] = []
        self.redeliver_s: float | None = None
        """Telegram's redelivery of updates the webhook failed (None: none)."""
        self.redeliveries = 0
        self._background: set[asyncio.Task[None]] = set()
        self._updates: deque[dict[str, Any]] = deque()
        self._update_ids = itertools.count(1)
        self._message_ids: dict[int, itertools.count[int]] = defaultdict(lambda: itertools.count(1))
        self._callback_ids = itertools.count(1)
        self._files: dict[str, _File] = {}
        self._file_ids = itertools.count(1)
        self._failures: dict[str, deque[tuple[int, dict[str, Any]]]] = defaultdict(deque)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.base_url = ""
        self.enqueued_at: dict[int, float] = {}

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> FakeBotAPI:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        port = await serve_on_loopback(self._runner)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeBotAPI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the user's side: updates ---------------------------------------------------

    def _message(
        self, user: FakeUser, chat: dict[str, Any] | None = None, **content: Any
    ) -> dict[str, Any]:
        chat = chat or user.chat()
        return {
            "message_id": next(self._message_ids[chat["id"]]),
            "date": int(time.time()),
            "chat": chat,
            "from": user.as_dict(),
            **content,
        }

    def _enqueue(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Queue an update for getUpdates, or POST it to the webhook once one is set."""
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: payload}
        self.enqueued_at[update_id] = time.monotonic()
        if self.webhook_url:
            task = asyncio.get_running_loop().create_task(self._post_to_webhook(update))
        else:
            self._updates.append(update)
            task = asyncio.get_running_loop().create_task(self._notify())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return payload

    async def _post_to_webhook(self, update: dict[str, Any]) -> None:
        """POST the update to the webhook; with `redeliver_s`, as Telegram does, again
        (every 0.3 s, for up to that long) while the webhook fails or cannot be reached."""
        headers = {}
        if self.webhook_secret:
            headers["X-Telegram-Bot-Api-Secret-Token"] = self.webhook_secret
        deadline = time.monotonic() + (self.redeliver_s or 0.0)
        while True:
            try:
                async with (
                    aiohttp.ClientSession() as session,
                    session.post(str(self.webhook_url), json=update, headers=headers) as response,
                ):
                    status = response.status
                    if status == 200:
                        await self._run_webhook_response(response)
            except aiohttp.ClientError:
                status = 0
            self.webhook_statuses.append(status)
            if not (status == 0 or status >= 500) or time.monotonic() >= deadline:
                break
            self.redeliveries += 1
            await asyncio.sleep(0.3)
        await self._notify()

    def send_text(
        self, user: FakeUser, text: str, *, chat: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The user sends a text message (in their private chat unless `chat` is given);
        returns the message as Telegram would store it."""
        content: dict[str, Any] = {"text": text}
        if text.startswith("/"):
            command = text.split()[0]
            content["entities"] = [
                {
                    "type": "bot_command",
                    "offset": 0,
                    "length": len(command.encode("utf-16-le")) // 2,
                }
            ]
        return self._enqueue("message", self._message(user, chat, **content))

    def edit_text(self, message: dict[str, Any], text: str) -> dict[str, Any]:
        """The user edits a text message they sent: an `edited_message` update with the
        same message id, the new text and an `edit_date`."""
        edited = {**message, "text": text, "edit_date": int(time.time())}
        return self._enqueue("edited_message", edited)

    def add_file(
        self, data: bytes, *, suffix: str = "bin", declared_size: int | None = None
    ) -> str:
        number = next(self._file_ids)
        file_id = f"file-{number}"
        self._files[file_id] = _File(
            file_id, f"documents/file_{number}.{suffix}", data, declared_size or len(data)
        )
        return file_id

    def _file_fields(self, file_id: str) -> dict[str, Any]:
        stored = self._files[file_id]
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": stored.declared_size,
        }

    def _photo_sizes(self, data: bytes) -> list[dict[str, Any]]:
        thumb = self.add_file(data[: max(1, len(data) // 4)], suffix="jpg")
        full = self.add_file(data, suffix="jpg")
        return [
            {**self._file_fields(thumb), "width": 90, "height": 60},
            {**self._file_fields(full), "width": 1280, "height": 853},
        ]

    def send_photo(
        self, user: FakeUser, data: bytes, *, caption: str | None = None, album: str | None = None
    ) -> dict[str, Any]:
        """A photo message; one of an album when `album` (its media_group_id) is given."""
        content: dict[str, Any] = {"photo": self._photo_sizes(data)}
        if caption:
            content["caption"] = caption
        if album:
            content["media_group_id"] = album
        return self._enqueue("message", self._message(user, **content))

    def send_album(
        self, user: FakeUser, photos: Iterable[bytes], *, caption: str | None = None
    ) -> list[dict[str, Any]]:
        """Photos with one media_group_id, as separate updates (the first carries the caption)."""
        group_id = f"album-{next(self._file_ids)}"
        return [
            self.send_photo(user, data, caption=caption if index == 0 else None, album=group_id)
            for index, data in enumerate(photos)
        ]

    def send_voice(self, user: FakeUser, data: bytes, *, duration: int = 3) -> dict[str, Any]:
        file_id = self.add_file(data, suffix="oga")
        voice = {**self._file_fields(file_id), "duration": duration, "mime_type": "audio/ogg"}
        return self._enqueue("message", self._message(user, voice=voice))

    def send_document(
        self,
        user: FakeUser,
        data: bytes,
        *,
        file_name: str,
        caption: str | None = None,
        mime_type: str,
        declared_size: int | None = None,
    ) -> dict[str, Any]:
        file_id = self.add_file(
            data, suffix=file_name.rsplit(".", 1)[-1], declared_size=declared_size
        )
        document = {**self._file_fields(file_id), "file_name": file_name, "mime_type": mime_type}
        content: dict[str, Any] = {"document": document}
        if caption:
            content["caption"] = caption
        return self._enqueue("message", self._message(user, **content))

    def press_button(self, user: FakeUser, message: dict[str, Any], data: str) -> dict[str, Any]:
        """The user presses an inline button of a message the bot sent."""
        query = {
            "id": f"cb-{next(self._callback_ids)}",
            "from": user.as_dict(),
            "message": message,
            "chat_instance": f"ci-{user.id}",
            "data": data,
        }
        return self._enqueue("callback_query", query)

    def stop_generation(self, user: FakeUser, draft_id: int) -> dict[str, Any]:
        """The user presses the stop button of a draft in their private chat."""
        return self._enqueue(
            "stopped_message_generation", {"chat": user.chat(), "draft_id": draft_id}
        )

    # -- failure injection ------------------------------------------------------------

    def fail_next(self, method: str, *, status: int = 500, times: int = 1, **parameters: Any):
        """The next `times` calls of `method` ("download" for file downloads) fail with
        `status` (and `description`, when given)."""
        for _ in range(times):
            self._failures[method.lower()].append((status, parameters))

    def rate_limit_next(self, method: str, *, retry_after: int = 1, times: int = 1) -> None:
        self.fail_next(method, status=429, times=times, retry_after=retry_after)

    # -- reading what the bot did ---------------------------------------------------

    def calls_of(self, method: str, *, ok_only: bool = True) -> list[ApiCall]:
        return [
            call
            for call in self.calls
            if call.method == method.lower() and (call.status == 200 or not ok_only)
        ]

    def sent_messages(self, chat_id: int | None = None) -> list[ApiCall]:
        """Successful sendMessage calls (to one chat), in order."""
        return [
            call
            for call in self.calls_of("sendMessage")
            if chat_id is None or int(call.params["chat_id"]) == chat_id
        ]

    def drafts(self, chat_id: int) -> list[ApiCall]:
        """Successful sendMessageDraft calls to one chat, in order."""
        return [
            call
            for call in self.calls_of("sendMessageDraft")
            if int(call.params["chat_id"]) == chat_id
        ]

    def pending_updates(self) -> int:
        return len(self._updates)

    async def wait_until(
        self, condition: Callable[[], Any], *, within_s: float = 20.0, what: str = "condition"
    ) -> Any:
        deadline = time.monotonic() + within_s
        async with self._changed:
            while not (value := condition()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=min(remaining, 0.2))
            return value

    async def wait_for_sent(
        self, chat_id: int, count: int, *, within_s: float = 20.0
    ) -> list[ApiCall]:
        await self.wait_until(
            lambda: len(self.sent_messages(chat_id)) >= count,
            within_s=within_s,
            what=f"{count} messages to chat {chat_id}",
        )
        return self.sent_messages(chat_id)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()
