"""The bot of the end-to-end tests, running: aiogram polling the fake Bot API server on
127.0.0.1, over real SQLite and Chroma and the real turn (`start_bot`), with the users
the tests speak as."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from aiogram import Bot, Dispatcher
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

from app.turns import TurnRequest
from app.worker import MemoryWorker
from bot.app import build_bot, build_dispatcher, make_turn, run_polling
from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeBotAPI, FakeUser

ALICE = FakeUser(101, "Alice", "en")
BORIS = FakeUser(202, "Борис", "ru")
MALLORY = FakeUser(666, "Mallory", "en")


@dataclass
class RunningBot:
    api: FakeBotAPI
    deps: Deps
    bot: Bot
    dispatcher: Dispatcher
    task: asyncio.Task[None]
    turns: list[dict[str, Any]] = field(default_factory=list)
    worker: MemoryWorker | None = None

    async def stop(self) -> None:
        if not self.task.done():
            await self.dispatcher.stop_polling()
        await self.task

    def stored(self, user: FakeUser) -> list[dict[str, Any]]:
        return [dict(row) for row in self.deps.store.messages.all_of(user.id)]

    async def reply_to(self, user: FakeUser, count: int = 1) -> list[ApiCall]:
        return await self.api.wait_for_sent(user.id, count)


class ToolFreeModel(GenericFakeChatModel):
    """A scripted responder: accepts tools, never calls them."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolFreeModel:
        return self


@pytest_asyncio.fixture
async def start_bot(make_deps: Callable[..., Deps]) -> AsyncIterator[Callable[..., Any]]:
    running: list[RunningBot] = []

    async def start(
        *,
        models: dict[str, Any] | None = None,
        worker_interval_s: float | None = None,
        checkpointer: Any = None,
        **overrides: Any,
    ) -> RunningBot:
        api = await FakeBotAPI().start()
        settings = {
            "telegram_token": api.token,
            "telegram_api_url": api.base_url,
            "allowed_user_ids": f"{ALICE.id},{BORIS.id}",
            "turn_wait_s": 0.2,
            "shutdown_timeout_s": 20.0,
            **overrides,
        }
        deps = make_deps(models=models, **settings)
        bot = build_bot(deps.settings)
        real_turn = make_turn(deps, checkpointer)
        turns: list[dict[str, Any]] = []

        async def recorded_turn(request: TurnRequest) -> dict[str, Any]:
            record = {
                "user_id": request.user_id,
                "text": request.text,
                "parts": request.parts,
                "external_id": request.rows[-1]["external_id"],
            }
            turns.append(record)
            record["started"] = time.monotonic()
            record["result"] = await real_turn(request)
            record["finished"] = time.monotonic()
            return record["result"]

        worker = None
        if worker_interval_s is not None:
            worker = MemoryWorker(deps, interval_s=worker_interval_s, max_backoff_s=5.0)
        dispatcher = build_dispatcher(deps, deps.settings, turn=recorded_turn, worker=worker)
        task = asyncio.create_task(run_polling(dispatcher, bot, handle_signals=False))
        instance = RunningBot(api, deps, bot, dispatcher, task, turns, worker)
        running.append(instance)
        await api.wait_until(lambda: api.calls_of("getUpdates", ok_only=False), what="polling")
        return instance

    yield start
    for instance in running:
        await instance.stop()
        await instance.api.close()


def report(label: str, timings: list[float]) -> None:
    ordered = sorted(timings)
    print(
        f"\n{label}: median {statistics.median(ordered) * 1000:.0f} ms, "
        f"min {ordered[0] * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms "
        f"over {len(ordered)} (turn_wait 200 ms included)"
    )
