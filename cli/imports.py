"""`topica import telegram|chatgpt`: another app's chat export becomes a user's memory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from cli.commands import subcommand

if TYPE_CHECKING:
    from core.deps import Deps
    from core.settings import Settings


def telegram_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="result.json, or a .zip of the Desktop export folder")
    parser.add_argument(
        "--chat",
        action="append",
        default=[],
        metavar="NAME_OR_ID",
        help="a chat to import (repeatable); default: every personal and bot chat",
    )
    parser.add_argument(
        "--me", metavar="NAME_OR_ID", help="who you are in the chats, if the export omits it"
    )


def chatgpt_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="conversations.json, or the export's .zip")


def read_telegram_export(args: argparse.Namespace, settings: Settings) -> None:
    from stores.exports.history import open_export
    from stores.exports.telegram import TelegramOptions, read_telegram

    options = TelegramOptions(chats=args.chat, me=args.me)
    with open_export(Path(args.file), ("result.json",), settings.ingest_max_bytes) as stream:
        args.history = _checked(read_telegram(stream, options), args.file)


def read_chatgpt_export(args: argparse.Namespace, settings: Settings) -> None:
    from stores.exports.chatgpt import read_chatgpt
    from stores.exports.history import open_export

    with open_export(Path(args.file), ("conversations.json",), settings.ingest_max_bytes) as stream:
        args.history = _checked(read_chatgpt(stream), args.file)


def skipped_text(skipped: dict[str, int]) -> str:
    """What an export reader skipped, by reason: `3 service message, 1 empty`."""
    return ", ".join(f"{count} {why}" for why, count in skipped.items())


def _checked(history, path: str):  # type: ignore[no-untyped-def]
    from core.errors import ExportFormatError

    if not history.messages:
        skipped = skipped_text(history.skipped)
        raise ExportFormatError(
            f"{path}: no messages to import" + (f" ({skipped})" if skipped else "")
        )
    return history


def _register(name: str, help_text: str, configure, prepare) -> None:  # type: ignore[no-untyped-def]
    async def run(args: argparse.Namespace, deps: Deps) -> None:
        await run_import(args, deps)

    run.__doc__ = help_text
    subcommand(name, "user", "json", configure=configure, group="import", prepare=prepare)(run)


_register(
    "telegram",
    "import a Telegram Desktop export (JSON): chats become topics, facts and people",
    telegram_arguments,
    read_telegram_export,
)
_register(
    "chatgpt",
    "import ChatGPT's data export (conversations.json): the branch each conversation shows",
    chatgpt_arguments,
    read_chatgpt_export,
)


async def run_import(args: argparse.Namespace, deps: Deps) -> None:
    from app.imports import import_history
    from cli.output import console, out, print_json, show_ingest
    from core.progress import progress_board
    from stores.checkpoints import durable_checkpointer

    history = args.history
    found = history.summary()
    console.print(
        f"{found['messages']} messages from {len(found['chats'])} chats "
        f"({found['first_at']} … {found['last_at']}), {found['people']} people"
    )
    with progress_board(console) as board:
        async with durable_checkpointer(deps.settings) as checkpointer:
            result = await import_history(
                deps, history, args.user, checkpointer=checkpointer, progress=board
            )
    if args.json:
        print_json(result)
        return
    show_ingest(result, Path(args.file))
    skipped = skipped_text(found["skipped"]) or "none"
    out.print(f"people: {result['import']['people_added']} new; skipped: {skipped}")
