"""The `topica` subcommands: each parses its own arguments and calls application services.

Each command imports what it uses when it runs: the registry below is all that `--help`
and the parser need, and `topica topics` never loads the response graph, LangChain,
Chroma or the sentence encoder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.deps import Deps
    from core.records import NewMessage
    from core.settings import Settings


class CommandError(Exception):
    """A problem to report as one line and exit 2."""


Run = Callable[[argparse.Namespace, Any], Awaitable[None]]
"""A command's coroutine: its arguments and the services (`Deps`; None if standalone)."""


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """A subcommand with only the shared options."""


@dataclass(frozen=True)
class Subcommand:
    """One `topica NAME …` (or `topica GROUP NAME …`): its help, the shared options it
    takes, its own arguments."""

    name: str
    help: str
    run: Run
    options: tuple[str, ...] = ("common",)
    """Shared option groups: `common` (--data-dir, -v), `user` (--user), `json` (--json)."""
    configure: Callable[[argparse.ArgumentParser], None] = no_arguments
    group: str | None = None
    writes: bool = True
    """False for a read-only command: it runs only on an existing data directory."""
    prepare: Callable[[argparse.Namespace, Settings], None] | None = None
    """Reads and checks the command's input before any service is built, so bad input
    creates nothing (no data directory either); raises to refuse."""
    standalone: bool = False
    """True for a command that opens its own stores (`copy`): it gets no services."""


COMMANDS: list[Subcommand] = []
GROUPS = {
    "eval": "retrieval evaluation",
    "bench": "speed and memory",
    "import": "chat history from other apps",
}


def subcommand(
    name: str,
    *options: str,
    configure: Callable[[argparse.ArgumentParser], None] = no_arguments,
    group: str | None = None,
    writes: bool = True,
    prepare: Callable[[argparse.Namespace, Settings], None] | None = None,
    standalone: bool = False,
) -> Callable[[Run], Run]:
    """Register the decorated coroutine as `topica [GROUP] NAME`; its docstring is the help."""

    def register(run: Run) -> Run:
        help_text = (run.__doc__ or "").strip()
        options_used = ("common", *options)
        COMMANDS.append(
            Subcommand(
                name, help_text, run, options_used, configure, group, writes, prepare, standalone
            )
        )
        return run

    return register


def switch(parser: argparse.ArgumentParser, flag: str, help: str, **more: Any) -> None:
    """An option that is off unless given (`store_true`); `more` as `add_argument` takes."""
    parser.add_argument(flag, action="store_true", help=help, **more)


def positional(name: str, help: str) -> Callable[[argparse.ArgumentParser], None]:
    return lambda parser: parser.add_argument(name, help=help)


def read_session_file(args: argparse.Namespace, settings: Settings) -> None:
    """The session file, read whole and checked before anything is created."""
    from stores.saved_sessions import read_session

    args.messages = read_session(
        Path(args.file), settings.ingest_max_bytes, settings.ingest_max_line_bytes
    )


async def ingest_file(deps: Deps, messages: list[NewMessage], user_id: int) -> dict:
    from app.memory import ingest
    from cli.output import console
    from core.progress import progress_board
    from stores.checkpoints import durable_checkpointer

    with progress_board(console) as board:
        async with durable_checkpointer(deps.settings) as checkpointer:
            return await ingest(deps, messages, user_id, checkpointer=checkpointer, progress=board)


@subcommand(
    "ingest",
    "user",
    "json",
    configure=positional("file", "JSONL session file"),
    prepare=read_session_file,
)
async def cmd_ingest(args: argparse.Namespace, deps: Deps) -> None:
    """store a saved session and archive it"""
    from cli.output import print_json, show_ingest

    result = await ingest_file(deps, args.messages, args.user)
    if args.json:
        print_json(result)
    else:
        show_ingest(result, Path(args.file))


def archive_arguments(parser: argparse.ArgumentParser) -> None:
    switch(
        parser,
        "--all",
        "archive the live tail too, not only chunks quiet for TOPICA_CHUNK_INTERVAL",
        dest="archive_all",
    )


@subcommand("archive", "user", "json", configure=archive_arguments)
async def cmd_archive(args: argparse.Namespace, deps: Deps) -> None:
    """run the memory graph over a user's unarchived messages"""
    from app.memory import archive
    from cli.output import console, print_json, show_ingest
    from core.progress import progress_board
    from stores.checkpoints import durable_checkpointer

    await require_memory(deps, args.user)
    with progress_board(console) as board:
        async with durable_checkpointer(deps.settings) as checkpointer:
            result = await archive(
                deps,
                args.user,
                archive_all=args.archive_all,
                checkpointer=checkpointer,
                progress=board,
            )
    if args.json:
        print_json(result)
    else:
        show_ingest(result, f"the unarchived messages of user {args.user}")


async def require_memory(deps: Deps, user_id: int) -> None:
    """A read-only command about a user with nothing stored says so (a mistyped --user)."""
    if not await asyncio.to_thread(deps.store.messages.count, user_id):
        others = await asyncio.to_thread(users_with_memory, deps)
        where = f"user {user_id} has no memory yet in {deps.settings.data_dir}"
        if not others:
            raise CommandError(where)
        shown = ", ".join(str(other) for other in others[:10])
        more = f" and {len(others) - 10} more" if len(others) > 10 else ""
        raise CommandError(f"{where}; users with memory there: {shown}{more} (--user ID)")


def users_with_memory(deps: Deps) -> list[int]:
    """The users of the store who have at least one stored message, in id order."""
    store = deps.store
    return [user for user in store.sessions.user_ids() if store.messages.count(user)]


async def note_new_user(deps: Deps, user_id: int) -> None:
    """A conversation with a user with nothing stored starts their memory: say so."""
    from cli.output import console

    if not await asyncio.to_thread(deps.store.messages.count, user_id):
        console.print(f"[dim]user {user_id} has no memory yet: this conversation starts it[/]")


@subcommand("topics", "user", "json", writes=False)
async def cmd_topics(args: argparse.Namespace, deps: Deps) -> None:
    """list a user's topics"""
    from app.views import topic_view
    from cli.output import out, print_json, topics_table

    await require_memory(deps, args.user)
    topics = await asyncio.to_thread(deps.store.topics.all_of, args.user)
    views = await asyncio.to_thread(topic_view, deps, args.user, topics)
    if args.json:
        print_json(views)
    else:
        out.print(topics_table(views, f"Topics of user {args.user}"))


@subcommand("export", "user", writes=False)
async def cmd_export(args: argparse.Namespace, deps: Deps) -> None:
    """all memory of a user as JSON"""
    from app.views import export_user
    from cli.output import print_json

    await require_memory(deps, args.user)
    print_json(await asyncio.to_thread(export_user, deps, args.user))


def ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the user's message")
    switch(parser, "--stream", "print the answer while it is written")


@subcommand("ask", "user", "json", configure=ask_arguments)
async def cmd_ask(args: argparse.Namespace, deps: Deps) -> None:
    """one turn: recall and answer, stored"""
    from app.turns import run_turn
    from cli.output import (
        AnswerPrinter,
        note_no_model,
        print_json,
        show_question,
        show_sources,
        show_turn,
    )
    from stores.checkpoints import durable_checkpointer

    if not args.question.strip():
        raise CommandError("the question is empty")
    await note_new_user(deps, args.user)
    note_no_model(deps.settings)
    if args.stream and args.json:
        raise CommandError("--stream prints for people; --json is whole, for machines")
    printer = AnswerPrinter() if args.stream else None
    if printer:
        show_question(args.question)
    async with durable_checkpointer(deps.settings) as checkpointer:
        result = await run_turn(
            deps, args.user, args.question, checkpointer=checkpointer, on_text=printer
        )
    if args.json:
        print_json(result)
    elif printer:
        printer.finish(result["answer"])
        show_sources(result)
    else:
        show_turn(args.question, result)


async def prompt_line(prompt: str) -> str | None:
    """One line typed at `prompt` (None at end of input), read in a daemon thread.

    Not in the event loop's executor: on Ctrl-C `asyncio.run` would wait for that thread,
    blocked in `input()` until Enter, so the first Ctrl-C seemed to do nothing. A daemon
    thread is simply left behind and the process exits at once (130)."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str | None] = loop.create_future()

    def settle(value: str | None) -> None:
        if not line.done():
            line.set_result(value)

    def read() -> None:
        try:
            value = input(prompt)
        except EOFError:
            value = None
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, value)

    threading.Thread(target=read, name="chat-prompt", daemon=True).start()
    return await line


@subcommand("chat", "user")
async def cmd_chat(args: argparse.Namespace, deps: Deps) -> None:
    """an interactive session in the terminal"""
    from app.turns import chat_session
    from cli.output import AnswerPrinter, note_no_model, out
    from stores.checkpoints import durable_checkpointer

    async def read() -> str | None:
        return await prompt_line("you> ")

    printer = AnswerPrinter(prompt="[bold green]topica>[/] ")

    def new_answer() -> AnswerPrinter:
        printer.start()
        return printer

    await note_new_user(deps, args.user)
    note_no_model(deps.settings)
    out.print(
        "[dim]/new starts a new conversation, /help lists the commands, "
        "/quit (or Ctrl-D) ends the session[/]"
    )
    async with durable_checkpointer(deps.settings) as checkpointer:
        await chat_session(
            deps,
            args.user,
            read,
            printer.finish,
            checkpointer=checkpointer,
            on_text=new_answer if deps.settings.streaming else None,
        )


DEMO_QUESTIONS = (
    "Что сказал ветеринар про Марципана?",
    "What shoes did I buy for the half-marathon?",
    "В каком ресторане будем праздновать юбилей мамы?",
)


def demo_arguments(parser: argparse.ArgumentParser) -> None:
    switch(parser, "--keep", "keep the temporary data directory to try more on")


@subcommand("demo", "user", configure=demo_arguments)
async def cmd_demo(args: argparse.Namespace, deps: Deps) -> None:
    """ingest the bundled example session and ask it three questions (temporary data)"""
    from app.turns import run_turn
    from cli.output import out, show_ingest, show_next_steps, show_turn
    from stores.checkpoints import durable_checkpointer
    from stores.saved_sessions import read_session

    session = resources.files("graphs") / "examples" / "demo_session.jsonl"
    with resources.as_file(session) as path:
        out.rule("[bold]Topica demo[/]: a saved session of 196 messages, Russian and English")
        result = await ingest_file(deps, read_session(path), args.user)
        show_ingest(result, path)
        out.rule("[bold]Recall[/]: three questions, answered from memory")
        async with durable_checkpointer(deps.settings) as checkpointer:
            for question in DEMO_QUESTIONS:
                turn = await run_turn(deps, args.user, question, checkpointer=checkpointer)
                show_turn(question, turn)
    kept = args.keep or args.data_dir is not None
    show_next_steps(deps.settings.data_dir if kept else None, args.user)


def reindex_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", type=int, help="only this user (default: every user)")


@subcommand("reindex", "json", configure=reindex_arguments)
async def cmd_reindex(args: argparse.Namespace, deps: Deps) -> None:
    """rebuild the vector index from SQLite (after changing the embeddings provider)"""
    from app.index import reindex
    from cli.output import console, out, print_json
    from core.ports import VECTOR_KINDS
    from core.progress import progress_board

    if args.user is not None:
        await require_memory(deps, args.user)
    with progress_board(console) as board:
        result = await reindex(deps, args.user, progress=board)
    if args.json:
        print_json(result)
        return
    for user in result["users"]:
        counts = ", ".join(f"{user[kind]} {kind}" for kind in VECTOR_KINDS if kind in user)
        out.print(f"user {user['user_id']}: {counts} ({result['embedder']})")
    if result["notice"]:
        console.print(f"[yellow]{result['notice']}[/] (other users are not reindexed yet)")
