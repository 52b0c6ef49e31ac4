"""The Mini App as the bot serves it: on the webhook's listener in webhook mode, on its
own port in polling mode; the chat menu button and the button under /memory open it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
import pytest

from bot.app import build_bot, build_dispatcher, make_turn, run_polling, run_webhook
from bot.texts import ENGLISH
from bot.webapp.api import serve_webapp
from core.deps import Deps
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.processes import free_port
from tests.support.webapp import init_data

pytestmark = pytest.mark.timeout(90)

ALICE = FakeUser(101, "Alice", "en")


async def get(url: str, auth: str | None = None) -> tuple[int, str, dict[str, str]]:
    headers = {"Authorization": auth} if auth else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        return response.status, await response.text(), dict(response.headers)


async def test_webhook_mode_serves_the_mini_app_on_its_listener(make_deps) -> None:
    port = free_port()
    async with FakeBotAPI() as api:
        deps = make_deps(
            telegram_token=api.token,
            telegram_api_url=api.base_url,
            allowed_user_ids=str(ALICE.id),
            webhook_url=f"http://127.0.0.1:{port}/telegram/hook",
            webhook_port=port,
            webapp_url=f"https://example.org:{port}/webapp/",
        )
        deps.store.facts.add(ALICE.id, "Alice's own fact", "identity", 95)
        dispatcher = build_dispatcher(deps, deps.settings, turn=make_turn(deps, None))
        stop = asyncio.Event()
        server = asyncio.create_task(
            run_webhook(dispatcher, build_bot(deps.settings), deps.settings, stop=stop, deps=deps)
        )
        try:
            await api.wait_until(lambda: api.webhook_url, what="setWebhook")
            await api.wait_until(lambda: api.menu_button, what="setChatMenuButton")
            assert api.menu_button["web_app"]["url"] == deps.settings.webapp_url
            base = f"http://127.0.0.1:{port}/webapp"
            status, page, headers = await get(base + "/")
            assert status == 200 and 'src="static/app.js"' in page
            assert "frame-ancestors" in headers["Content-Security-Policy"]
            status, script, headers = await get(base + "/static/app.js")
            assert "tgWebAppData" in script
            assert status == 200 and "javascript" in headers["Content-Type"]
            auth = "tma " + init_data(ALICE.id, token=api.token)
            status, facts, _ = await get(base + "/api/facts", auth)
            assert status == 200 and "Alice's own fact" in facts
            assert (await get(base + "/api/facts"))[0] == 401
        finally:
            stop.set()
            await server


async def test_polling_mode_memory_has_the_mini_app_button(
    make_deps: Callable[..., Deps],
) -> None:
    async with FakeBotAPI() as api:
        deps = make_deps(
            telegram_token=api.token,
            telegram_api_url=api.base_url,
            allowed_user_ids=str(ALICE.id),
            turn_wait_s=0.1,
            webapp_url="https://example.org/webapp/",
        )
        deps.store.facts.add(ALICE.id, "Alice's own fact", "identity", 95)
        port = free_port()
        runner = await serve_webapp(deps, "127.0.0.1", port)
        dispatcher = build_dispatcher(deps, deps.settings, turn=make_turn(deps, None))
        task = asyncio.create_task(
            run_polling(dispatcher, build_bot(deps.settings), handle_signals=False)
        )
        try:
            await api.wait_until(lambda: api.menu_button, what="setChatMenuButton")
            api.send_text(ALICE, "/memory")
            [reply] = await api.wait_for_sent(ALICE.id, 1)
            [[button]] = reply.params["reply_markup"]["inline_keyboard"]
            assert button["text"] == ENGLISH.webapp_button
            assert button["web_app"]["url"] == "https://example.org/webapp/"
            auth = "tma " + init_data(ALICE.id, token=api.token)
            status, facts, _ = await get(f"http://127.0.0.1:{port}/webapp/api/facts", auth)
            assert status == 200 and "Alice's own fact" in facts
        finally:
            await dispatcher.stop_polling()
            await task
            await runner.cleanup()
