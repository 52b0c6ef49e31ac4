"""The `topica` command line: ingest and inspect saved sessions, ask, chat, demo.

Machines get `--json`; people get progress and tables. Bad input is one line
on stderr and exit status 2; nothing of a bad file is stored.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from graphs.archive import archive_user, store_messages
from graphs.deps import Deps, build_deps, durable_checkpointer
from graphs.logs import configure_logging
from graphs.settings import Settings
from graphs.state import MemoryState
from graphs.turns import chat_session, run_turn
from stores.records import TopicRow
from stores.relational import StoreError
from stores.sessions import SessionFormatError, read_session
from stores.vectors import VectorStoreUnavailable

EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3

console = Console(stderr=True)
out = Console(soft_wrap=True)


class CommandError(Exception):
    """A problem to report as one line and exit 2."""


# -- shared views ----------------------------------------------------------------


def topic_view(deps: Deps, user_id: int, topics: Sequence[TopicRow]) -> list[dict[str, Any]]:
    """Topics as the JSON outputs show them: external message ids, membership not range."""
    members = deps.store.topic_message_ids(user_id, [topic["id"] for topic in topics])
    bounds = deps.store.messages_by_ids(
        user_id, [i for topic in topics for i in (topic["start_msg_id"], topic["end_msg_id"])]
    )
    external = {row["id"]: row["external_id"] for row in bounds}
    return [
        {
            "id": topic["id"],
            "summary": topic["summary"],
            "start_msg_id": external.get(topic["start_msg_id"]),
            "end_msg_id": external.get(topic["end_msg_id"]),
            "message_count": topic["message_count"],
            "size_chars": topic["size_chars"],
            "first_message_at": topic["first_message_at"],
            "last_message_at": topic["last_message_at"],
            "message_ids": members[topic["id"]],
        }
        for topic in topics
    ]


def topics_table(views: Sequence[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, show_lines=False, expand=True)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("messages", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("date", no_wrap=True)
    table.add_column("summary", ratio=1)
    for view in views:
        table.add_row(
            str(view["id"]),
            f"{view['start_msg_id']}…{view['end_msg_id']}",
            str(view["message_count"]),
            view["first_message_at"][:10],
            view["summary"],
        )
    return table


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


# -- commands --------------------------------------------------------------------


async def ingest(
    deps: Deps, path: Path, user_id: int, as_json: bool, checkpointer: BaseCheckpointSaver | None
) -> dict[str, Any]:
    messages = read_session(path)
    status = None if as_json else console.status(f"Storing {len(messages)} messages…")
    if status:
        status.start()
    try:
        new_rows = await store_messages(deps, user_id, messages)
        chunks: list[MemoryState] = []

        def progress(state: MemoryState) -> None:
            chunks.append(state)
            if status:
                chunk = state["chunk"]
                status.update(
                    f"Archived chunk {len(chunks)}: {len(chunk)} messages → "
                    f"{len(state['saved_topic_ids'])} topics (split by {state['split_by']})"
                )

        await archive_user(
            deps, user_id, archive_all=True, checkpointer=checkpointer, on_chunk=progress
        )
    finally:
        if status:
            status.stop()

    file_ids = [message["external_id"] for message in messages]
    stored = {row["external_id"]: row for row in deps.store.all_messages(user_id)}
    topic_ids = list(
        dict.fromkeys(stored[i]["topic_id"] for i in file_ids if stored[i]["topic_id"] is not None)
    )
    topics = sorted(deps.store.topics_by_ids(user_id, topic_ids), key=lambda t: t["start_msg_id"])
    fallbacks = sorted({state["split_fallback"] for state in chunks if state.get("split_fallback")})
    facts_reports = [state["facts"] for state in chunks if "facts" in state]
    return {
        "user_id": user_id,
        "messages": len(messages),
        "new_messages": len(new_rows),
        "chunks": len(chunks),
        "topics": topic_view(deps, user_id, topics),
        "uncovered": [i for i in file_ids if stored[i]["topic_id"] is None],
        "merges": [merge for state in chunks for merge in state.get("merges", [])],
        "facts": deps.store.list_facts(user_id),
        "facts_status": facts_reports[-1]["status"] if facts_reports else None,
        "facts_reason": facts_reports[-1]["reason"] if facts_reports else None,
        "split_fallbacks": fallbacks,
        "llm": deps.models.name("splitter"),
    }


def show_ingest(result: dict[str, Any], path: Path) -> None:
    out.print(topics_table(result["topics"], f"Topics from {path.name}"))
    merges = len(result["merges"])
    out.print(
        f"[bold]{result['messages']}[/] messages ({result['new_messages']} new) in "
        f"{result['chunks']} chunks → [bold]{len(result['topics'])}[/] topics, "
        f"{merges} merged, {len(result['uncovered'])} uncovered; "
        f"splitter: {result['llm'] or 'embeddings (no LLM configured)'}; "
        f"facts: {result['facts_status'] or 'nothing new'}"
        + (f" ({result['facts_reason']})" if result["facts_reason"] else "")
    )


async def cmd_ingest(args: argparse.Namespace, deps: Deps) -> None:
    async with durable_checkpointer(deps.settings) as checkpointer:
        result = await ingest(deps, Path(args.file), args.user, args.json, checkpointer)
    if args.json:
        print_json(result)
    else:
        show_ingest(result, Path(args.file))


async def cmd_topics(args: argparse.Namespace, deps: Deps) -> None:
    views = topic_view(deps, args.user, deps.store.list_topics(args.user))
    if args.json:
        print_json(views)
    else:
        out.print(topics_table(views, f"Topics of user {args.user}"))


def export_user(deps: Deps, user_id: int) -> dict[str, Any]:
    """Everything Topica keeps about one user, as JSON-ready data."""
    store = deps.store
    return {
        "user_id": user_id,
        "messages": store.all_messages(user_id),
        "topics": topic_view(deps, user_id, store.list_topics(user_id)),
        "facts": store.list_facts(user_id),
        "fact_history": store.fact_history(user_id),
        "people": store.list_people(user_id),
    }


async def cmd_export(args: argparse.Namespace, deps: Deps) -> None:
    print_json(export_user(deps, args.user))


def show_turn(question: str, result: dict[str, Any]) -> None:
    out.print(f"[bold cyan]?[/] {question}")
    table = Table(show_header=True, expand=True, box=None, padding=(0, 1))
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("topic", justify="right", no_wrap=True)
    table.add_column("messages", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("why", ratio=1)
    for rank, topic in enumerate(result["topics"], start=1):
        table.add_row(
            str(rank),
            str(topic["id"]),
            f"{topic['start_msg_id']}…{topic['end_msg_id']}",
            f"{topic['score']:.3f}",
            topic["reason"],
        )
    out.print(table)
    fallback = f"; reranker fallback: {result['fallback']}" if result["fallback"] else ""
    out.print(
        f"[dim]{result['context_tokens']} context tokens, {result['llm_calls']} LLM calls"
        f"{fallback}[/]"
    )
    out.print(result["answer"])
    out.print()


async def cmd_ask(args: argparse.Namespace, deps: Deps) -> None:
    if not args.question.strip():
        raise CommandError("the question is empty")
    async with durable_checkpointer(deps.settings) as checkpointer:
        result = await run_turn(deps, args.user, args.question, checkpointer=checkpointer)
    if args.json:
        print_json(result)
    else:
        show_turn(args.question, result)


async def cmd_chat(args: argparse.Namespace, deps: Deps) -> None:
    def read_line() -> str | None:
        try:
            return input("you> ")
        except EOFError:
            return None

    async def read() -> str | None:
        return await asyncio.to_thread(read_line)

    def write(answer: str) -> None:
        out.print(f"[bold green]topica>[/] {answer}")

    out.print("[dim]/new starts a new conversation, /quit (or Ctrl-D) ends the session[/]")
    async with durable_checkpointer(deps.settings) as checkpointer:
        await chat_session(deps, args.user, read, write, checkpointer=checkpointer)


DEMO_QUESTIONS = (
    "Что сказал ветеринар про Марципана?",
    "What shoes did I buy for the half-marathon?",
    "В каком ресторане будем праздновать юбилей мамы?",
)


async def cmd_demo(args: argparse.Namespace, deps: Deps) -> None:
    session = resources.files("graphs") / "examples" / "demo_session.jsonl"
    with resources.as_file(session) as path:
        out.rule("[bold]Topica demo[/]: a saved session of 196 messages, Russian and English")
        async with durable_checkpointer(deps.settings) as checkpointer:
            result = await ingest(deps, path, args.user, False, checkpointer)
            show_ingest(result, path)
            out.rule("[bold]Recall[/]: three questions, answered from memory")
            for question in DEMO_QUESTIONS:
                turn = await run_turn(deps, args.user, question, checkpointer=checkpointer)
                show_turn(question, turn)


async def cmd_eval(args: argparse.Namespace, deps: Deps) -> None:
    from bench.eval_locomo import eval_locomo
    from bench.report import show_eval

    if not args.data.is_file():
        raise CommandError(f"{args.data}: no such file")
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


async def cmd_bench(args: argparse.Namespace, deps: Deps) -> None:
    from bench.scale import bench_search, show_bench

    result = await bench_search([int(size) for size in args.topics.split(",")], args.out)
    if args.json:
        print_json(result)
    else:
        show_bench(result, out)


async def cmd_bot(args: argparse.Namespace, deps: Deps) -> None:
    from bot.app import BotConfigError, run_bot

    try:
        await run_bot(deps, deps.settings)
    except BotConfigError as error:
        raise CommandError(str(error)) from None


COMMANDS: dict[str, Callable[[argparse.Namespace, Deps], Coroutine[Any, Any, None]]] = {
    "ingest": cmd_ingest,
    "topics": cmd_topics,
    "export": cmd_export,
    "ask": cmd_ask,
    "chat": cmd_chat,
    "demo": cmd_demo,
    "bot": cmd_bot,
    "eval": cmd_eval,
    "bench": cmd_bench,
}


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", type=Path, help="data directory (default: TOPICA_DATA_DIR)")
    common.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    user = argparse.ArgumentParser(add_help=False)
    user.add_argument("--user", type=int, default=1, help="user id (default 1)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="machine-readable output")

    parser = argparse.ArgumentParser(
        prog="topica", description="Topica: a chat assistant with long-term memory."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ingest_parser = commands.add_parser(
        "ingest", parents=[common, user, as_json], help="store a saved session and archive it"
    )
    ingest_parser.add_argument("file", help="JSONL session file")
    commands.add_parser("topics", parents=[common, user, as_json], help="list a user's topics")
    commands.add_parser("export", parents=[common, user], help="all memory of a user as JSON")
    ask_parser = commands.add_parser(
        "ask", parents=[common, user, as_json], help="one turn: recall and answer, stored"
    )
    ask_parser.add_argument("question", help="the user's message")
    commands.add_parser(
        "chat", parents=[common, user], help="an interactive session in the terminal"
    )
    commands.add_parser(
        "bot", parents=[common], help="run the Telegram bot (long polling, or webhook if set)"
    )
    evaluation = commands.add_parser("eval", help="retrieval evaluation").add_subparsers(
        dest="benchmark", required=True
    )
    locomo = evaluation.add_parser(
        "locomo", parents=[common, as_json], help="LoCoMo recall at a token budget, with baselines"
    )
    locomo.add_argument("--data", type=Path, required=True, help="locomo JSON file")
    locomo.add_argument("--conversations", help="sample ids, comma-separated (default: all)")
    locomo.add_argument("--budget", type=int, default=2000, help="context budget in tokens")
    locomo.add_argument("--k", default="5,10", help="cut-offs for recall@k, comma-separated")
    locomo.add_argument("--out", type=Path, help="write report.md, results.json and plots here")
    bench = commands.add_parser("bench", help="speed and memory").add_subparsers(
        dest="benchmark", required=True
    )
    search = bench.add_parser(
        "search", parents=[common, as_json], help="search latency at scale, against brute force"
    )
    search.add_argument("--topics", default="1000,10000,100000", help="sizes, comma-separated")
    search.add_argument("--out", type=Path, help="write the table and the plot here")
    commands.add_parser(
        "demo", parents=[common, user], help="ingest the bundled example session (temporary data)"
    )
    return parser


def settings_for(args: argparse.Namespace) -> Settings:
    settings = Settings()
    if args.data_dir is not None:
        settings = settings.model_copy(update={"data_dir": args.data_dir})
    return settings


async def run(args: argparse.Namespace) -> None:
    settings = settings_for(args)
    if args.command == "demo" and args.data_dir is None:
        with tempfile.TemporaryDirectory(prefix="topica-demo-") as directory:
            deps = build_deps(settings.model_copy(update={"data_dir": Path(directory)}))
            try:
                await COMMANDS[args.command](args, deps)
            finally:
                deps.close()
        return
    deps = build_deps(settings)
    try:
        await COMMANDS[args.command](args, deps)
    finally:
        deps.close()


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
    except (SessionFormatError, StoreError, CommandError) as error:
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
