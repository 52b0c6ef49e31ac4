"""The bot in-process against `FakeBotAPI` on loopback, with every turn recorded.

The same wiring as `topica bot` in polling mode (`build_bot`, `build_dispatcher`,
`make_turn`, `run_polling`), minus signal handling: the bot stops when the
`running_bot` block ends. Each turn's user, external id and start/finish times are
recorded, so a test can see how messages were grouped and when each turn ran.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiogram import Dispatcher

from app.turns import TurnRequest
from bot.app import build_bot, build_dispatcher, make_turn, run_polling
from core.deps import Deps
from tests.support.bot_api_server import ApiCall, FakeBotAPI, FakeUser


@dataclass
class TurnRecord:
    user_id: int
    external_id: str
    started: float
    finished: float | None = None
    result: dict[str, Any] | None = None
    text: str = ""
    """What the turn answered: the group's text, media turned into text included."""


@dataclass
class RunningBot:
    api: FakeBotAPI
    deps: Deps
    dispatcher: Dispatcher
    turns: list[TurnRecord] = field(default_factory=list)

    def turns_of(self, user: FakeUser) -> list[TurnRecord]:
        return [turn for turn in self.turns if turn.user_id == user.id]


def buttons(call: ApiCall) -> list[dict[str, Any]]:
    """The inline buttons under a message the bot sent, row after row."""
    markup = call.params.get("reply_markup") or {}
    return [button for row in markup.get("inline_keyboard", []) for button in row]


async def command(running: RunningBot, user: FakeUser, text: str) -> ApiCall:
    """Send `text` as `user`; the bot's next message to them."""
    before = len(running.api.sent_messages(user.id))
    running.api.send_text(user, text)
    return (await running.api.wait_for_sent(user.id, before + 1))[-1]


async def round_trips(
    api: FakeBotAPI, user: FakeUser, count: int, *, within_s: float = 30.0
) -> list[float]:
    """Seconds from each text update being enqueued to the bot's reply reaching the server."""
    timings = []
    for index in range(count):
        already = len(api.sent_messages(user.id))
        api.send_text(user, f"Question {index}: what did I tell you about Lisbon and Olga?")
        update_id = max(api.enqueued_at)
        replies = await api.wait_for_sent(user.id, already + 1, within_s=within_s)
        timings.append(replies[-1].at - api.enqueued_at[update_id])
    return timings


@asynccontextmanager
async def running_bot(
    make_deps: Callable[..., Deps],
    users: Iterable[FakeUser],
    *,
    models: dict[str, Any] | None = None,
    **settings: Any,
) -> AsyncIterator[RunningBot]:
    """Start the bot for `users` (the allowlist) over services from `make_deps`."""
    api = await FakeBotAPI().start()
    try:
        deps = make_deps(
            models=models,
            telegram_token=api.token,
            telegram_api_url=api.base_url,
            allowed_user_ids=",".join(str(user.id) for user in users),
            **{"shutdown_timeout_s": 20.0, **settings},
        )
        real_turn = make_turn(deps, None)
        turns: list[TurnRecord] = []

        async def recorded_turn(request: TurnRequest) -> dict[str, Any]:
            external_id = request.rows[-1]["external_id"]
            record = TurnRecord(
                request.user_id, external_id, started=time.monotonic(), text=request.text
            )
            turns.append(record)
            record.result = await real_turn(request)
            record.finished = time.monotonic()
            return record.result

        dispatcher = build_dispatcher(deps, deps.settings, turn=recorded_turn)
        task = asyncio.create_task(
            run_polling(dispatcher, build_bot(deps.settings), handle_signals=False)
        )
        try:
            await api.wait_until(lambda: api.calls_of("getUpdates", ok_only=False), what="polling")
            yield RunningBot(api, deps, dispatcher, turns)
        finally:
            if not task.done():
                await dispatcher.stop_polling()
            await task
    finally:
        await api.close()
