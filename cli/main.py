"""The `topica` command line: ingest and inspect saved sessions, ask, chat, demo, eval.

Machines get `--json`; people get progress and tables. Bad input is one line on stderr
and exit status 2; nothing of a bad file is stored; an unreachable service is exit 3.

Other adapters add subcommands through the `topica.commands` entry point group (the
Telegram bot adds `topica bot`), so the command line never imports them: each entry
point is a module with `NAME`, `HELP`, `configure(parser)` and `async run(args, deps)`.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import entry_points, version
from pathlib import Path

from pydantic import ValidationError

from cli.commands import COMMANDS, GROUPS, CommandError, Subcommand
from core.errors import ConfigurationError, StoreError, VectorStoreUnavailable
from core.logs import configure_logging
from core.settings import Settings
from stores.saved_sessions import SessionFormatError
from stores.services import build_deps

EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3
PLUGINS = "topica.commands"


def plugin_commands() -> list[Subcommand]:
    """Subcommands other adapters contribute through the `topica.commands` entry points."""
    found = []
    for entry in entry_points(group=PLUGINS):
        module = entry.load()
        found.append(Subcommand(module.NAME, module.HELP, module.run, configure=module.configure))
    return found


def build_parser() -> argparse.ArgumentParser:
    shared = {name: argparse.ArgumentParser(add_help=False) for name in ("common", "user", "json")}
    shared["common"].add_argument(
        "--data-dir", type=Path, help="data directory (default: TOPICA_DATA_DIR)"
    )
    shared["common"].add_argument("-v", "--verbose", action="store_true", help="log what happens")
    shared["user"].add_argument("--user", type=int, default=1, help="user id (default 1)")
    shared["json"].add_argument("--json", action="store_true", help="machine-readable output")

    def add(parent: argparse._SubParsersAction, command: Subcommand) -> None:
        parser = parent.add_parser(
            command.name,
            parents=[shared[option] for option in command.options],
            help=command.help,
        )
        command.configure(parser)
        parser.set_defaults(handler=command.run, writes=command.writes)

    parser = argparse.ArgumentParser(
        prog="topica", description="Topica: a chat assistant with long-term memory."
    )
    parser.add_argument("--version", action="version", version=f"topica {version('topica')}")
    commands = parser.add_subparsers(dest="command", required=True)
    every = [*COMMANDS, *plugin_commands()]
    for command in every:
        if command.group is None:
            add(commands, command)
    for group, help_text in GROUPS.items():
        members = commands.add_parser(group, help=help_text).add_subparsers(
            dest="subcommand", required=True
        )
        for command in every:
            if command.group == group:
                add(members, command)
    return parser


def settings_for(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if args.data_dir is not None:
        settings = settings.model_copy(update={"data_dir": args.data_dir})
    return settings


async def run(args: argparse.Namespace) -> None:
    settings = settings_for(args)
    if not args.writes and not settings.sqlite_path.is_file():
        # A read-only command creates nothing: a mistyped --data-dir is reported, not made.
        raise CommandError(f"no data in {settings.data_dir}")
    temporary = args.command == "demo" and args.data_dir is None
    if temporary:
        settings = settings.model_copy(
            update={"data_dir": Path(tempfile.mkdtemp(prefix="topica-demo-"))}
        )
    deps = build_deps(settings)
    try:
        await args.handler(args, deps)
    finally:
        deps.close()
        if temporary and not args.keep:
            shutil.rmtree(settings.data_dir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_for(args)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        print(
            f"topica: error: invalid configuration: TOPICA_{where.upper()}: {problem['msg']}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    configure_logging(args.verbose, settings.log_format == "json")
    try:
        asyncio.run(run(args))
    except (SessionFormatError, StoreError, CommandError, ConfigurationError) as error:
        print(f"topica: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except sqlite3.OperationalError as error:
        print(f"topica: error: database unavailable: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except VectorStoreUnavailable as error:
        print(
            f"topica: error: {error} (everything received is stored; "
            "it is indexed on the next run)",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print("topica: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
