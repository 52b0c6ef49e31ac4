"""What the fake Bot API server (`tests.support.bot_api_server.FakeBotAPI`) answers:
its HTTP routes, the methods it runs, failure injection's replies and the error mapping
(400 parse errors, 429 retry_after, 5xx), file downloads, and the method a webhook
request's response names.

`BotApiMethods` is mixed into `FakeBotAPI`, whose state (its token, recorded calls,
queued updates, files, injected failures, `reject_html`, `drafts_supported`, webhook)
these methods read and change; a method `getMe` is served by `_m_getme`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.bot_api_world import (
    MAX_TEXT_UTF16,
    ApiCall,
    HtmlError,
    check_telegram_html,
    utf16_length,
)

__all__ = ["BotApiMethods"]


class BotApiMethods:
    """The server side of `FakeBotAPI`: HTTP handlers and the Bot API methods."""

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
