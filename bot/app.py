"""Assembling and running the bot: dispatcher, middlewares, routers, lifecycle.

`run_bot(deps, settings)` is what `topica bot` runs: long polling by default,
a webhook (with a secret token) when `TOPICA_WEBHOOK_URL` is set. It returns
after SIGINT/SIGTERM once shutdown is complete:

1. updates stop arriving (polling stops / the webhook server closes);
2. open message groups are closed at once and their turns run;
3. document reads are stopped at once (their senders are told), and in-flight turns,
   memory runs and the task scheduler's pass under way get `shutdown_timeout_s` to
   finish;
4. in polling mode, the updates handled are confirmed to Telegram, so a
   restart does not receive them again (a redelivered message would be
   recognised as stored and skipped anyway);
5. the checkpointer and the Bot API session close. The caller owns `deps`
   and closes the stores after `run_bot` returns.

Services reach handlers as the dispatcher's workflow data: `deps`,
`settings`, `grouper`, `turn` (`app.turns.make_turn`), `worker`, `tracker`, `inbox` (where
messages and their edits are received), `digester` (the media graph), `scheduler` (due
reminders and tasks, `bot.scheduler`).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from urllib.parse import urlsplit

from aiogram import Bot, Dispatcher
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramAPIError, TelegramNetworkError
from aiogram.types import BotCommand
from aiogram.utils.token import TokenValidationError, validate_token
from aiogram.webhook.aiohttp_server import setup_application
from aiohttp import web

from app.inbox import Inbox
from app.media import MediaDigester
from app.monitoring import Check, serve_metrics
from app.reading import resume_readers, stop_readers
from app.turns import Turn, make_turn
from app.worker import MemoryWorker
from bot.grouping import MessageGrouper
from bot.middlewares import AllowlistMiddleware, LanguageMiddleware, StoreIncomingMiddleware
from bot.responses import KeepResponseModels
from bot.retry import RetryRequestMiddleware
from bot.routers import callbacks, commands, groups, imports, messages, sources, tasks
from bot.routers.messages import answer_unanswered
from bot.scheduler import TaskScheduler
from bot.texts import ENGLISH, RUSSIAN
from bot.tracking import InFlightMiddleware, TaskTracker
from bot.webapp.api import add_webapp, serve_webapp
from bot.webapp.telegram import set_menu_button
from bot.webhook import ReplyingRequestHandler
from bot.webhook_secret import webhook_secret
from core.deps import Deps
from core.errors import ConfigurationError, ServiceUnavailable
from core.settings import Settings
from stores.checkpoints import durable_checkpointer

log = logging.getLogger(__name__)


class BotConfigError(ConfigurationError):
    """The bot cannot start with these settings."""


def check_token(settings: Settings) -> str:
    """The bot token, or `BotConfigError` naming the variable when it is unset or malformed."""
    if settings.telegram_token is None:
        raise BotConfigError("TOPICA_TELEGRAM_TOKEN is not set")
    token = settings.telegram_token.get_secret_value()
    try:
        validate_token(token)
    except TokenValidationError:
        raise BotConfigError(
            "TOPICA_TELEGRAM_TOKEN is malformed: a bot token from @BotFather looks like "
            "123456789:AAE-ab12… (digits, a colon, then letters, digits, - and _)"
        ) from None
    return token


def build_bot(settings: Settings) -> Bot:
    """A Bot talking to `telegram_api_url`, every request retried with backoff."""
    token = check_token(settings)
    session = AiohttpSession(
        api=TelegramAPIServer.from_base(settings.telegram_api_url, is_local=False)
    )
    session.middleware(RetryRequestMiddleware())
    session.middleware(KeepResponseModels())
    return Bot(token=token, session=session)


def build_dispatcher(
    deps: Deps, settings: Settings, *, turn: Turn, worker: MemoryWorker | None = None
) -> Dispatcher:
    dispatcher = Dispatcher(
        deps=deps,
        settings=settings,
        grouper=MessageGrouper(settings.turn_wait_s),
        turn=turn,
        worker=worker,
        tracker=TaskTracker(),
        inbox=Inbox(deps),
        digester=MediaDigester(deps),
        pending=imports.PendingImports(),
        scheduler=TaskScheduler(deps, settings.task_poll_s),
    )
    dispatcher.update.outer_middleware(InFlightMiddleware(dispatcher["tracker"]))
    dispatcher.update.outer_middleware(AllowlistMiddleware(settings.allowed_user_ids))
    dispatcher.update.outer_middleware(LanguageMiddleware())
    dispatcher.message.outer_middleware(StoreIncomingMiddleware())
    dispatcher.include_routers(
        groups.build_router(),
        sources.build_router(),
        tasks.build_router(),
        commands.build_router(),
        callbacks.build_router(),
        imports.build_router(),
        messages.build_router(),
    )
    dispatcher.startup.register(on_startup)
    dispatcher.shutdown.register(on_shutdown)
    return dispatcher


async def on_startup(
    bot: Bot,
    deps: Deps,
    settings: Settings,
    grouper: MessageGrouper,
    inbox: Inbox,
    turn: Turn,
    tracker: TaskTracker,
    worker: MemoryWorker | None,
    scheduler: TaskScheduler,
) -> None:
    """Document reads accepted, the services warmed up (`warm_up`) and the heap frozen
    (`freeze_heap`), then commands menus, the memory worker, the task scheduler, and the
    turns a stopped bot left unanswered (before the first update is received, so a
    redelivery of theirs is a duplicate)."""
    resume_readers()
    await asyncio.to_thread(warm_up, deps)
    freeze_heap()
    for task in await answer_unanswered(bot, inbox, settings.allowed_user_ids, grouper, turn):
        tracker.track(task)
    for texts, language in ((ENGLISH, None), (RUSSIAN, "ru")):
        await bot.set_my_commands(
            [BotCommand(command=name, description=text) for name, text in texts.commands()],
            language_code=language,
        )
    await set_menu_button(bot, settings)
    if worker is not None:
        worker.start()
    scheduler.start(bot)


def warm_up(deps: Deps) -> None:
    """Load the embedder's weights and connect the vector store now rather than in the
    first turn (about a second between them: the encoder's files, importing Chroma). One
    that fails is only logged: the first turn tries again, as it would have anyway."""
    for what, ready in (("embedder", deps.embedder.load), ("vector store", deps.vectors.heartbeat)):
        try:
            ready()
        except Exception as error:
            log.warning("the %s is not ready at start-up: %s", what, error)


def freeze_heap() -> None:
    """Move the objects alive at start-up out of the cyclic garbage collector's view.

    They live as long as the process: modules, the encoder's tokenizer, compiled graphs
    and the clients, about 370,000 objects. Every full collection walked all of them while
    holding the GIL, about 250 ms each, 4 times in the load test's 200 turns; with them
    frozen, its full collections took about 50 ms in all. No collection runs first (it
    would cost as long as one of those): what little garbage start-up left is kept with
    them until `on_shutdown` thaws the heap, after which, in a process that goes on (the
    tests), it is collected as usual."""
    gc.freeze()


async def on_shutdown(
    bot: Bot,
    settings: Settings,
    grouper: MessageGrouper,
    tracker: TaskTracker,
    worker: MemoryWorker | None,
    scheduler: TaskScheduler,
    mode: str = "polling",
) -> None:
    log.info(
        "shutting down: %d open group(s), %d update(s) in flight", grouper.open_groups, len(tracker)
    )
    gc.unfreeze()
    grouper.flush()
    if killed := stop_readers():
        log.info("stopped %d document read(s)", killed)
    timeout = settings.shutdown_timeout_s
    stop_worker = worker.stop(timeout) if worker is not None else asyncio.sleep(0)
    late, *_ = await asyncio.gather(tracker.wait(timeout), stop_worker, scheduler.stop(timeout))
    if late:
        log.warning("%d update(s) still running after %.0f s were cancelled", late, timeout)
    if mode == "polling" and tracker.last_update_id is not None:
        try:
            await bot.get_updates(offset=tracker.last_update_id + 1, limit=1, timeout=0)
        except TelegramAPIError as error:
            log.warning("could not confirm the handled updates to Telegram: %s", error)


async def run_polling(dispatcher: Dispatcher, bot: Bot, *, handle_signals: bool = True) -> None:
    """Long polling until SIGINT/SIGTERM (or `dispatcher.stop_polling()`), then shutdown."""
    await bot.delete_webhook(drop_pending_updates=False)
    await dispatcher.start_polling(
        bot,
        handle_signals=handle_signals,
        allowed_updates=dispatcher.resolve_used_update_types(),
        mode="polling",
    )


async def run_webhook(
    dispatcher: Dispatcher,
    bot: Bot,
    settings: Settings,
    *,
    stop: asyncio.Event,
    deps: Deps | None = None,
) -> None:
    """Serve Telegram's webhook on `webhook_host:webhook_port` until `stop` is set; with
    `deps` and a Mini App URL, the Mini App on the same listener."""
    if not settings.webhook_url:
        raise BotConfigError("TOPICA_WEBHOOK_URL is not set")
    secret = webhook_secret(settings)
    app = web.Application()
    # Shutdown hooks run before the handler closes the Bot API session: they still send.
    setup_application(app, dispatcher, bot=bot, mode="webhook")
    # Answer Telegram only after the handler ran: the incoming message is stored by then,
    # and an answer that is one message goes in the response (`bot.webhook`).
    ReplyingRequestHandler(
        dispatcher=dispatcher, bot=bot, secret_token=secret, handle_in_background=False
    ).register(app, path=urlsplit(settings.webhook_url).path or "/")
    if deps is not None and settings.webapp_url:
        add_webapp(app, deps)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, settings.webhook_host, settings.webhook_port).start()
        await bot.set_webhook(
            settings.webhook_url,
            secret_token=secret,
            allowed_updates=dispatcher.resolve_used_update_types(),
        )
        log.info("webhook listening on %s:%s", settings.webhook_host, settings.webhook_port)
        await stop.wait()
    finally:
        await runner.cleanup()


def log_startup(settings: Settings) -> None:
    """One line on how the bot runs, and a warning when nobody may use it."""
    log.info(
        "topica bot starting: mode %s, %d allowed user(s), data dir %s, group memory %s",
        "webhook" if settings.webhook_url else "polling",
        len(settings.allowed_user_ids),
        settings.data_dir,
        "on" if settings.group_memory else "off",
    )
    if not settings.allowed_user_ids:
        log.warning(
            "the allowlist is empty (TOPICA_ALLOWED_USER_IDS): every update will be refused"
        )


def health_checks(deps: Deps, bot: Bot) -> dict[str, Check]:
    """What `/healthz` asks: the database, the vector store and the Telegram Bot API."""
    return {
        "database": lambda: asyncio.to_thread(deps.store.ping),
        "vectors": lambda: asyncio.to_thread(deps.vectors.heartbeat),
        "telegram": bot.get_me,
    }


async def run_bot(deps: Deps, settings: Settings) -> None:
    """Run the bot until SIGINT/SIGTERM; returns after a graceful shutdown (see module doc)."""
    bot = build_bot(settings)
    log_startup(settings)
    metrics = (
        await serve_metrics(settings.metrics_host, settings.metrics_port, health_checks(deps, bot))
        if settings.metrics_port
        else None
    )
    webapp = (
        await serve_webapp(deps, settings.webapp_host, settings.webapp_port)
        if settings.webapp_url and not settings.webhook_url
        else None
    )
    try:
        await _serve(deps, settings, bot)
    except TelegramNetworkError as error:  # at start-up; polling rides out later ones
        raise ServiceUnavailable(
            f"Telegram Bot API unreachable at {settings.telegram_api_url}: {error.message}"
        ) from error
    finally:
        await bot.session.close()
        for runner in (metrics, webapp):
            if runner is not None:
                await runner.cleanup()


async def _serve(deps: Deps, settings: Settings, bot: Bot) -> None:
    async with durable_checkpointer(settings) as checkpointer:
        worker = MemoryWorker(
            deps,
            interval_s=settings.memory_worker_interval_s,
            max_backoff_s=settings.memory_worker_max_backoff_s,
            checkpointer=checkpointer,
        )
        dispatcher = build_dispatcher(
            deps, settings, turn=make_turn(deps, checkpointer), worker=worker
        )
        if not settings.webhook_url:
            await run_polling(dispatcher, bot)
            return
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await run_webhook(dispatcher, bot, settings, stop=stop, deps=deps)
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
