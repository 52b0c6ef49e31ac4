"""The `topica` command line: ingest and inspect saved sessions, ask, chat, demo, eval.

Machines get `--json`; people get progress and tables. Bad input is one line on stderr
and exit status 2; nothing of a bad file is stored; an unreachable service is exit 3.

Only the command that runs loads what it needs (`--help` loads no store, `topics` no
vector index, encoder or LangChain: tests/e2e/test_cold_start.py).

Other adapters add subcommands through the `topica.commands` entry point group (the
Telegram bot adds `topica bot`), so the command line never imports them: each entry
point is a module with `NAME`, `HELP`, `configure(parser)` and `async run(args, deps)`,
and optionally `prepare(args, settings)`, which checks the settings before any service
is built.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import entry_points, version
from pathlib import Path
from typing import TYPE_CHECKING

from cli import deployment, evaluation, imports, tasks  # noqa: F401  (register their subcommands)
from cli.commands import COMMANDS, GROUPS, CommandError, Subcommand

if TYPE_CHECKING:
    from core.settings import Settings

EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3
EXIT_BROKEN_PIPE = 1  # what rich's console does on a broken pipe (tables, progress)
PLUGINS = "topica.commands"


def plugin_commands() -> list[Subcommand]:
    """Subcommands other adapters contribute through the `topica.commands` entry points."""
    found = []
    for entry in entry_points(group=PLUGINS):
        module = entry.load()
        found.append(
            Subcommand(
                module.NAME,
                module.HELP,
                module.run,
                configure=module.configure,
                prepare=getattr(module, "prepare", None),
            )
        )
    return found


def user_id(text: str) -> int:
    """A `--user` value: an integer a store can hold (`core.records.ID_RANGE`)."""
    from core.records import ID_RANGE

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value not in ID_RANGE:
        raise argparse.ArgumentTypeError(f"{text} is out of range (a 64-bit integer)")
    return value


def add_global_options(parser: argparse.ArgumentParser, default: object) -> None:
    """`--data-dir` and `--verbose`, accepted before the subcommand and after it.

    The top-level parser holds the real defaults; a subcommand's copies default to
    `SUPPRESS`, so they set a value only when given and never undo one given earlier."""
    parser.add_argument(
        "--data-dir", type=Path, default=default, help="data directory (default: TOPICA_DATA_DIR)"
    )
    verbose_default = False if default is None else default
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=verbose_default, help="log what happens"
    )


def build_parser() -> argparse.ArgumentParser:
    shared = {name: argparse.ArgumentParser(add_help=False) for name in ("common", "user", "json")}
    add_global_options(shared["common"], default=argparse.SUPPRESS)
    shared["user"].add_argument("--user", type=user_id, default=1, help="user id (default 1)")
    shared["json"].add_argument("--json", action="store_true", help="machine-readable output")

    def add(parent: argparse._SubParsersAction, command: Subcommand) -> None:
        parser = parent.add_parser(
            command.name,
            parents=[shared[option] for option in command.options],
            help=command.help,
        )
        command.configure(parser)
        parser.set_defaults(
            handler=command.run,
            writes=command.writes,
            prepare=command.prepare,
            standalone=command.standalone,
        )

    parser = argparse.ArgumentParser(
        prog="topica", description="Topica: a chat assistant with long-term memory."
    )
    parser.add_argument("--version", action="version", version=f"topica {version('topica')}")
    add_global_options(parser, default=None)
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
    from core.settings import Settings

    settings = Settings()
    if args.data_dir is not None:
        settings = settings.model_copy(update={"data_dir": args.data_dir})
    return settings


def check_data_dir(directory: Path) -> None:
    """A data directory that cannot be one (a file, or a path under a file) is bad input."""
    if directory.exists() and not directory.is_dir():
        raise CommandError(f"data directory {directory} is a file, not a directory")
    for parent in directory.parents:
        if parent.exists() and not parent.is_dir():
            raise CommandError(f"data directory {directory} lies under a file ({parent})")


async def run(args: argparse.Namespace) -> None:
    from stores.services import build_deps

    if args.standalone:
        await args.handler(args, None)
        return
    settings = settings_for(args)
    check_data_dir(settings.data_dir)
    if args.prepare is not None:
        args.prepare(args, settings)
    if getattr(args, "llm", False):  # `doctor --llm` asks the endpoint, opens no store
        args.settings = settings
        await args.handler(args, None)
        return
    if not args.writes and settings.database_url is None and not settings.sqlite_path.is_file():
        # A read-only command creates nothing: a mistyped --data-dir is reported, not made.
        raise CommandError(f"no data in {settings.data_dir}")
    temporary = args.command == "demo" and args.data_dir is None
    if temporary:
        settings = settings.model_copy(
            update={"data_dir": Path(tempfile.mkdtemp(prefix="topica-demo-"))}
        )
    deps = build_deps(settings)
    try:
        notice = None
        if args.writes and args.command != "reindex":
            from app.index import embedder_notice

            notice = await asyncio.to_thread(embedder_notice, deps)
        if notice:
            print(f"topica: warning: {notice}", file=sys.stderr)
        await args.handler(args, deps)
    finally:
        deps.close()
        if temporary and not args.keep:
            shutil.rmtree(settings.data_dir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pydantic import ValidationError

    from core.errors import (
        ConfigurationError,
        ServiceUnavailable,
        SessionFormatError,
        StoreError,
        VectorStoreUnavailable,
    )
    from core.logs import configure_logging, redact, secrets_of

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
    configure_logging(args.verbose, settings.log_format == "json", secrets_of(settings))
    try:
        asyncio.run(run(args))
    except (SessionFormatError, StoreError, CommandError, ConfigurationError) as error:
        print(redact(f"topica: error: {error}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except sqlite3.OperationalError as error:
        print(redact(f"topica: error: database unavailable: {error}"), file=sys.stderr)
        return EXIT_UNAVAILABLE
    except ServiceUnavailable as error:
        print(redact(f"topica: error: {error}"), file=sys.stderr)
        return EXIT_UNAVAILABLE
    except BrokenPipeError:
        # The reader went away (`topica topics --json | head -1`): stop quietly, and
        # keep the interpreter's last flush of stdout from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except VectorStoreUnavailable as error:
        print(
            redact(
                f"topica: error: {error} (everything received is stored; "
                "it is indexed on the next run)"
            ),
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print("topica: interrupted", file=sys.stderr)
        return 130
    return 0


def entry() -> int:
    """The `topica` script: `main`, then an exit without the interpreter's last collections.

    At exit the interpreter runs full garbage collections over every object the process
    made: with LangGraph and Chroma loaded, a noticeable share of a short command's time,
    spent on memory the operating system is about to take back anyway. By then the stores
    are closed and the event loop is gone, so the heap is frozen instead: the collections
    skip it. Objects are still freed by reference counting, `atexit` handlers still run and
    the interpreter still flushes stdout and stderr. `main` itself freezes nothing, so a
    process that calls it (the tests) collects as usual."""
    try:
        return main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    sys.exit(entry())
