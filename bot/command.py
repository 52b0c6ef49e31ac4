"""`topica bot`: the Telegram bot as a subcommand of the command line.

Registered through the `topica.commands` entry point (pyproject.toml), so the command
line runs the bot without importing it. aiogram is imported only when the bot runs, so
the other commands start without it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.deps import Deps
    from core.settings import Settings

NAME = "bot"
HELP = "run the Telegram bot (long polling, or webhook if set)"


def configure(parser: argparse.ArgumentParser) -> None:
    """No arguments of its own: everything comes from the settings."""


def prepare(args: argparse.Namespace, settings: Settings) -> None:
    """A missing or malformed token is refused before any store is opened or created."""
    from bot.app import check_token

    check_token(settings)


async def run(args: argparse.Namespace, deps: Deps) -> None:
    from bot.app import run_bot

    await run_bot(deps, deps.settings)
