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
import html
import itertools
import json
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import aiohttp
from aiohttp import web

from bench.llm_server import serve_on_loopback

__all__ = [
    "ApiCall",
    "FakeBotAPI",
    "FakeUser",
    "HtmlError",
    "check_telegram_html",
    "group_chat",
]

MAX_TEXT_UTF16 = 4096
ALLOWED_TAGS = {
    "b": set(),
    "strong": set(),
    "i": set(),
    "em": set(),
    "u": set(),
    "ins": set(),
    "s": set(),
    "strike": set(),
    "del": set(),
    "tg-spoiler": set(),
    "span": {"class"},
    "a": {"href"},
    "code": {"class"},
    "pre": set(),
    "blockquote": {"expandable"},
    "tg-emoji": {"emoji-id"},
}
NAMED_ENTITIES = {"lt", "gt", "amp", "quot"}


@dataclass(frozen=True)
class FakeUser:
    id: int
    first_name: str = "Alexei"
    language_code: str | None = "en"
    username: str | None = None

    def as_dict(self) -> dict[str, Any]:
        user: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.language_code:
            user["language_code"] = self.language_code
        if self.username:
            user["username"] = self.username
        return user

    def chat(self) -> dict[str, Any]:
        return {"id": self.id, "type": "private", "first_name": self.first_name}


def group_chat(chat_id: int = -1001234567890, title: str = "Family") -> dict[str, Any]:
    """A supergroup (Telegram's group chat ids are negative)."""
    return {"id": chat_id, "type": "supergroup", "title": title}


@dataclass
class ApiCall:
    """One request the bot made, with its form fields decoded."""

    method: str
    params: dict[str, Any]
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    status: int = 200
    result: Any = None
    in_webhook_response: bool = False
    """Made by answering a webhook request with the method, as Telegram allows."""


class HtmlError(ValueError):
    """Markup Telegram would refuse with "can't parse entities"."""


class _TelegramHtmlChecker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            raise HtmlError(f'Unsupported start tag "{tag}"')
        for name, _ in attrs:
            if name not in ALLOWED_TAGS[tag]:
                raise HtmlError(f'Unsupported attribute "{name}" in tag "{tag}"')
        self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise HtmlError(f'Unsupported self-closing tag "{tag}"')

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            raise HtmlError(f'Unmatched end tag "{tag}"')
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if "<" in data or ">" in data:
            raise HtmlError('Unexpected "<" or ">" in text')
        self.text.append(data)

    def handle_entityref(self, name: str) -> None:
        if name not in NAMED_ENTITIES:
            raise HtmlError(f'Unsupported HTML entity "&{name};"')
        self.text.append(html.unescape(f"&{name};"))

    def handle_charref(self, name: str) -> None:
        self.text.append(html.unescape(f"&#{name};"))

    def handle_comment(self, data: str) -> None:
        raise HtmlError("Comments are not supported")

    def handle_decl(self, decl: str) -> None:
        raise HtmlError("Declarations are not supported")


def check_telegram_html(markup: str) -> str:
    """The visible text of Telegram HTML, or HtmlError where Telegram would refuse it."""
    checker = _TelegramHtmlChecker()
    checker.feed(markup)
    checker.close()
    if checker.rawdata:
        raise HtmlError("Unclosed tag or entity at the end of the text")
    if checker.open:
        raise HtmlError(f'Can\'t find end tag corresponding to start tag "{checker.open[-1]}"')
    return "".join(checker.text)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class _File:
    file_id: str
    path: str
    data: bytes
    declared_size: int


class FakeBotAPI:
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

    # -- HTTP --------------------------------------------------------------------------

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        failure = self._next_failure("download")
        if failure is not None:
            return web.Response(status=failure[0], text="injected failure")
        path = request.match_info["path"]
        for stored in self._files.values():
            if stored.path == path:
                return web.Response(body=stored.data, content_type="application/octet-stream")
        return web.Response(status=404)

    def _next_failure(self, method: str) -> tuple[int, dict[str, Any]] | None:
        queue = self._failures.get(method)
        return queue.popleft() if queue else None

    async def _api(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        params, files = await self._read_params(request)
        return await self._call(ApiCall(request.match_info["method"].lower(), params, files))

    async def _call(self, call: ApiCall) -> web.Response:
        method, params, files = call.method, call.params, call.files
        self.calls.append(call)
        try:
            failure = self._next_failure(method)
            if failure is not None:
                status, parameters = failure
                if status == 429:
                    retry_after = parameters["retry_after"]
                    response = self._error(
                        429,
                        f"Too Many Requests: retry after {retry_after}",
                        {"retry_after": retry_after},
                    )
                else:
                    description = parameters.get("description", "Internal Server Error: injected")
                    response = self._error(status, description)
            else:
                handler = getattr(self, f"_m_{method}", None)
                if handler is None:
                    response = self._error(404, "Not Found: method not found")
                else:
                    result = await handler(params, files)
                    response = (
                        result if isinstance(result, web.Response) else self._ok(result, call)
                    )
            call.status = response.status
            return response
        finally:
            await self._notify()

    async def _read_params(
        self, request: web.Request
    ) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
        params: dict[str, Any] = dict(request.query)
        files: dict[str, tuple[str, bytes]] = {}
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, web.FileField):
                    files[name] = (value.filename, value.file.read())
                else:
                    params[name] = value
        return self._decoded(params, files)

    async def _run_webhook_response(self, response: aiohttp.ClientResponse) -> None:
        """Telegram runs the method a webhook request's response names (form data or
        JSON with a `method` field); its result goes nowhere."""
        params: dict[str, Any] = {}
        files: dict[str, tuple[str, bytes]] = {}
        if response.content_type == "application/json":
            body = await response.json()
            params = body if isinstance(body, dict) else {}
        elif response.content_type == "multipart/form-data":
            reader = aiohttp.MultipartReader(response.headers, response.content)
            while (part := await reader.next()) is not None:
                assert isinstance(part, aiohttp.BodyPartReader)
                if part.filename:
                    files[str(part.name)] = (part.filename, await part.read())
                else:
                    params[str(part.name)] = await part.text()
        method = params.pop("method", None)
        if not method:
            return
        params, files = self._decoded(params, files)
        await self._call(ApiCall(str(method).lower(), params, files, in_webhook_response=True))

    @staticmethod
    def _decoded(
        params: dict[str, Any], files: dict[str, tuple[str, bytes]]
    ) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
        for name, value in list(params.items()):
            if isinstance(value, str) and value.startswith("attach://"):
                files[name] = files.pop(value.removeprefix("attach://"))
                del params[name]
            elif isinstance(value, str) and value[:1] in "[{":
                with contextlib.suppress(ValueError):
                    params[name] = json.loads(value)
        return params, files

    def _ok(self, result: Any, call: ApiCall) -> web.Response:
        call.result = result
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(status: int, description: str, parameters: dict | None = None) -> web.Response:
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if parameters:
            body["parameters"] = parameters
        return web.json_response(body, status=status)

    def _bot_message(self, chat_id: int, **content: Any) -> dict[str, Any]:
        return {
            "message_id": next(self._message_ids[chat_id]),
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": self.bot_user,
            **content,
        }

    # -- methods -----------------------------------------------------------------------

    async def _m_getme(self, params, files):
        return self.bot_user

    async def _m_getupdates(self, params, files):
        offset = int(params.get("offset", 0) or 0)
        limit = int(params.get("limit", 100) or 100)
        timeout = float(params.get("timeout", 0) or 0)
        if offset:
            while self._updates and self._updates[0]["update_id"] < offset:
                self._updates.popleft()
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not self._updates and time.monotonic() < deadline:
                try:
                    await asyncio.wait_for(
                        self._changed.wait(), timeout=deadline - time.monotonic()
                    )
                except TimeoutError:
                    break
        return list(itertools.islice(self._updates, limit))

    def _visible_text(self, params: dict[str, Any]) -> str | web.Response:
        """The text Telegram would show, or its 400 for markup or length it refuses."""
        visible = text = str(params.get("text", ""))
        if params.get("parse_mode") == "HTML":
            if self.reject_html:
                return self._error(400, "Bad Request: can't parse entities: injected rejection")
            try:
                visible = check_telegram_html(text)
            except HtmlError as error:
                return self._error(400, f"Bad Request: can't parse entities: {error}")
        if utf16_length(visible) > MAX_TEXT_UTF16:
            return self._error(400, "Bad Request: message is too long")
        return visible

    async def _m_sendmessage(self, params, files):
        visible = self._visible_text(params)
        if isinstance(visible, web.Response):
            return visible
        if not visible.strip():
            return self._error(400, "Bad Request: message text is empty")
        content: dict[str, Any] = {"text": visible}
        if "reply_markup" in params:
            content["reply_markup"] = params["reply_markup"]
        return self._bot_message(int(params["chat_id"]), **content)

    async def _m_sendmessagedraft(self, params, files):
        if not self.drafts_supported:
            return self._error(404, "Not Found: method not found")
        if int(params["chat_id"]) < 0:
            return self._error(400, "Bad Request: drafts can be sent only to private chats")
        if not int(params.get("draft_id", 0)):
            return self._error(400, "Bad Request: draft_id must be non-zero")
        visible = self._visible_text(params)
        return visible if isinstance(visible, web.Response) else True

    async def _m_editmessagetext(self, params, files):
        text = str(params.get("text", ""))
        if params.get("parse_mode") == "HTML":
            try:
                text = check_telegram_html(text)
            except HtmlError as error:
                return self._error(400, f"Bad Request: can't parse entities: {error}")
        content: dict[str, Any] = {"message_id": int(params["message_id"]), "text": text}
        if "reply_markup" in params:
            content["reply_markup"] = params["reply_markup"]
        return {
            "date": int(time.time()),
            "chat": {"id": int(params["chat_id"]), "type": "private"},
            "from": self.bot_user,
            **content,
        }

    async def _m_senddocument(self, params, files):
        if "document" not in files:
            return self._error(400, "Bad Request: there is no document in the request")
        name, data = files["document"]
        file_id = self.add_file(data, suffix=name.rsplit(".", 1)[-1])
        document = {**self._file_fields(file_id), "file_name": name}
        return self._bot_message(int(params["chat_id"]), document=document)

    async def _m_getfile(self, params, files):
        stored = self._files.get(str(params.get("file_id")))
        if stored is None:
            return self._error(400, "Bad Request: invalid file_id")
        if stored.declared_size > 20 * 1024 * 1024:
            return self._error(400, "Bad Request: file is too big")
        return {**self._file_fields(stored.file_id), "file_path": stored.path}

    async def _m_sendchataction(self, params, files):
        return True

    async def _m_answercallbackquery(self, params, files):
        return True

    async def _m_setmycommands(self, params, files):
        return True

    async def _m_setchatmenubutton(self, params, files):
        self.menu_button = params.get("menu_button")
        return True

    async def _m_deletewebhook(self, params, files):
        self.webhook_url = None
        return True

    async def _m_setwebhook(self, params, files):
        self.webhook_url = str(params.get("url"))
        self.webhook_secret = params.get("secret_token")
        return True
