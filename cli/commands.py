"""The `topica` subcommands: each parses its own arguments and calls application services."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from app.memory import ingest
from app.turns import chat_session, run_turn
from app.views import export_user, topic_view
from cli.output import (
    AnswerPrinter,
    console,
    out,
    print_json,
    show_ingest,
    show_next_steps,
    show_question,
    show_sources,
    show_turn,
    topics_table,
)
from core.deps import Deps
from core.progress import progress_board
from stores.checkpoints import durable_checkpointer
from stores.saved_sessions import read_session


class CommandError(Exception):
    """A problem to report as one line and exit 2."""


Run = Callable[[argparse.Namespace, Deps], Awaitable[None]]


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


COMMANDS: list[Subcommand] = []
GROUPS = {"eval": "retrieval evaluation", "bench": "speed and memory"}


def subcommand(
    name: str,
    *options: str,
    configure: Callable[[argparse.ArgumentParser], None] = no_arguments,
    group: str | None = None,
    writes: bool = True,
) -> Callable[[Run], Run]:
    """Register the decorated coroutine as `topica [GROUP] NAME`; its docstring is the help."""

    def register(run: Run) -> Run:
        help_text = (run.__doc__ or "").strip()
        options_used = ("common", *options)
        COMMANDS.append(Subcommand(name, help_text, run, options_used, configure, group, writes))
        return run

    return register


def positional(name: str, help: str) -> Callable[[argparse.ArgumentParser], None]:
    return lambda parser: parser.add_argument(name, help=help)


async def ingest_file(deps: Deps, path: Path, user_id: int) -> dict:
    messages = read_session(path)
    with progress_board(console) as board:
        async with durable_checkpointer(deps.settings) as checkpointer:
            return await ingest(deps, messages, user_id, checkpointer=checkpointer, progress=board)


@subcommand("ingest", "user", "json", configure=positional("file", "JSONL session file"))
async def cmd_ingest(args: argparse.Namespace, deps: Deps) -> None:
    """store a saved session and archive it"""
    result = await ingest_file(deps, Path(args.file), args.user)
    if args.json:
        print_json(result)
    else:
        show_ingest(result, Path(args.file))


async def require_memory(deps: Deps, user_id: int) -> None:
    """A read-only command about a user with nothing stored says so (a mistyped --user)."""
    if not await asyncio.to_thread(deps.store.messages.count, user_id):
        raise CommandError(f"user {user_id} has no memory yet in {deps.settings.data_dir}")


async def note_new_user(deps: Deps, user_id: int) -> None:
    """A conversation with a user with nothing stored starts their memory: say so."""
    if not await asyncio.to_thread(deps.store.messages.count, user_id):
        console.print(f"[dim]user {user_id} has no memory yet: this conversation starts it[/]")


@subcommand("topics", "user", "json", writes=False)
async def cmd_topics(args: argparse.Namespace, deps: Deps) -> None:
    """list a user's topics"""
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
    await require_memory(deps, args.user)
    print_json(await asyncio.to_thread(export_user, deps, args.user))


def ask_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", help="the user's message")
    parser.add_argument(
        "--stream", action="store_true", help="print the answer while it is written"
    )


@subcommand("ask", "user", "json", configure=ask_arguments)
async def cmd_ask(args: argparse.Namespace, deps: Deps) -> None:
    """one turn: recall and answer, stored"""
    if not args.question.strip():
        raise CommandError("the question is empty")
    await note_new_user(deps, args.user)
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


@subcommand("chat", "user")
async def cmd_chat(args: argparse.Namespace, deps: Deps) -> None:
    """an interactive session in the terminal"""

    def read_line() -> str | None:
        try:
            return input("you> ")
        except EOFError:
            return None

    async def read() -> str | None:
        return await asyncio.to_thread(read_line)

    printer = AnswerPrinter(prompt="[bold green]topica>[/] ")

    def new_answer() -> AnswerPrinter:
        printer.start()
        return printer

    await note_new_user(deps, args.user)
    out.print("[dim]/new starts a new conversation, /quit (or Ctrl-D) ends the session[/]")
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
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary data directory to try more on"
    )


@subcommand("demo", "user", configure=demo_arguments)
async def cmd_demo(args: argparse.Namespace, deps: Deps) -> None:
    """ingest the bundled example session and ask it three questions (temporary data)"""
    session = resources.files("graphs") / "examples" / "demo_session.jsonl"
    with resources.as_file(session) as path:
        out.rule("[bold]Topica demo[/]: a saved session of 196 messages, Russian and English")
        result = await ingest_file(deps, path, args.user)
        show_ingest(result, path)
        out.rule("[bold]Recall[/]: three questions, answered from memory")
        async with durable_checkpointer(deps.settings) as checkpointer:
            for question in DEMO_QUESTIONS:
                turn = await run_turn(deps, args.user, question, checkpointer=checkpointer)
                show_turn(question, turn)
    kept = args.keep or args.data_dir is not None
    show_next_steps(deps.settings.data_dir if kept else None, args.user)


def locomo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="locomo JSON file")
    parser.add_argument("--conversations", help="sample ids, comma-separated (default: all)")
    parser.add_argument("--budget", type=int, default=2000, help="context budget in tokens")
    parser.add_argument("--k", default="5,10", help="cut-offs for recall@k, comma-separated")
    parser.add_argument("--out", type=Path, help="write report.md, results.json and plots here")


@subcommand("locomo", "json", configure=locomo_arguments, group="eval")
async def cmd_eval_locomo(args: argparse.Namespace, deps: Deps) -> None:
    """LoCoMo recall at a token budget, with baselines"""
    from bench.eval_locomo import eval_locomo
    from bench.report import require_plots, show_eval

    if not args.data.is_file():
        raise CommandError(f"{args.data}: no such file")
    if args.out is not None:
        require_plots()  # before minutes of work, not after
    result = await eval_locomo(
        args.data,
        args.conversations.split(",") if args.conversations else None,
        args.budget,
        [int(k) for k in args.k.split(",")],
        args.out,
        deps.settings,
        console=None if args.json else console,
    )
    if args.json:
        print_json(result)
    else:
        show_eval(result, out)


def bench_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topics", default="1000,10000,100000", help="sizes, comma-separated")
    parser.add_argument("--out", type=Path, help="write the table and the plot here")


@subcommand("search", "json", configure=bench_search_arguments, group="bench")
async def cmd_bench_search(args: argparse.Namespace, deps: Deps) -> None:
    """search latency at scale, against brute force"""
    from bench.report import require_plots
    from bench.scale import bench_search, show_bench

    if args.out is not None:
        require_plots()
    result = await bench_search([int(size) for size in args.topics.split(",")], args.out)
    if args.json:
        print_json(result)
    else:
        show_bench(result, out)
