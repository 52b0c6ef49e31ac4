"""The `topica eval …` and `topica bench …` subcommands: measurements of Topica itself."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from cli.commands import CommandError, subcommand, switch

if TYPE_CHECKING:
    from core.deps import Deps
    from core.settings import Settings


def eval_arguments(parser: argparse.ArgumentParser, data_help: str) -> None:
    parser.add_argument("--data", type=Path, required=True, help=data_help)
    parser.add_argument("--conversations", help="conversations, comma-separated (default: all)")
    parser.add_argument("--budget", type=int, default=2000, help="context budget in tokens")
    parser.add_argument("--k", default="5,10", help="cut-offs for recall@k, comma-separated")
    parser.add_argument("--out", type=Path, help="write report.md, results.json and plots here")
    switch(parser, "--cross-validate", "leave-one-conversation-out view of Topica's tuned weights")
    parser.add_argument(
        "--ingests",
        type=Path,
        help="keep each stored conversation here and reuse it while the conversation, "
        "embedder, settings and ingestion code stay the same (SQLite and Chroma on disk)",
    )


def locomo_arguments(parser: argparse.ArgumentParser) -> None:
    eval_arguments(parser, "locomo JSON file")


def beam_arguments(parser: argparse.ArgumentParser) -> None:
    eval_arguments(parser, "a folder laid out as BEAM's chats/ (<size>/<n>/chat.json)")


def check_ingests(args: argparse.Namespace, settings: Settings) -> None:
    """Before any service is built: `--ingests` is a folder (or not there yet) that the
    deployment's stores can be kept in."""
    from bench.ingests import kept_in_data_dir

    if args.ingests is None:
        return
    if args.ingests.exists() and not args.ingests.is_dir():
        raise CommandError(f"--ingests: {args.ingests} is not a folder")
    if why := kept_in_data_dir(settings):
        raise CommandError(why)


async def run_eval(benchmark_name: str, args: argparse.Namespace, deps: Deps) -> None:
    """One benchmark through the shared harness: checks first, then the run and its output."""
    from bench.harness import evaluate
    from bench.report import require_plots
    from bench.terminal import show_eval
    from cli.output import console, print_result

    if benchmark_name == "beam":
        from bench.beam import BEAM as benchmark

        if not args.data.is_dir():
            raise CommandError(f"{args.data}: no such folder")
    else:
        from bench.eval_locomo import LOCOMO as benchmark

        if not args.data.is_file():
            raise CommandError(f"{args.data}: no such file")
    if args.budget < 1:
        raise CommandError("--budget must be at least 1")
    try:
        ks = [int(k) for k in args.k.split(",")]
    except ValueError:
        raise CommandError(f"--k: not a list of numbers: {args.k}") from None
    if args.out is not None:
        require_plots()  # before minutes of work, not after
    try:
        result = await evaluate(
            benchmark,
            args.data,
            [c.strip() for c in args.conversations.split(",")] if args.conversations else None,
            args.budget,
            ks,
            args.out,
            deps.settings,
            console=None if args.json else console,
            cross_validate=args.cross_validate,
            ingests=args.ingests,
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    print_result(result, show_eval, args.json)


@subcommand("locomo", "json", configure=locomo_arguments, group="eval", prepare=check_ingests)
async def cmd_eval_locomo(args: argparse.Namespace, deps: Deps) -> None:
    """LoCoMo recall at a token budget, with baselines"""
    await run_eval("locomo", args, deps)


@subcommand("beam", "json", configure=beam_arguments, group="eval", prepare=check_ingests)
async def cmd_eval_beam(args: argparse.Namespace, deps: Deps) -> None:
    """BEAM recall at a token budget by question type, abstention, with baselines"""
    await run_eval("beam", args, deps)


def diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=Path, help="a run's JSON (eval locomo|beam --json)")
    parser.add_argument("after", type=Path, help="another run's JSON, of the same benchmark")
    parser.add_argument("--method", default="topica", help="the method compared")
    parser.add_argument(
        "--before-method",
        help="another method of the first run to compare against (default: --method)",
    )
    switch(parser, "--key", "compare the key-sentence view instead of recall_all")
    parser.add_argument("--show", type=int, default=10, help="questions listed per budget")


RUN_MAX_BYTES = 256 * 2**20
"""The largest run file `eval diff` reads (a run of every dev conversation is a few MB)."""


def read_run(path: Path) -> dict:
    """An evaluation run's JSON; a one-line error for a missing, oversized or malformed
    file."""
    import json

    try:
        if path.stat().st_size > RUN_MAX_BYTES:
            raise CommandError(f"{path}: over {RUN_MAX_BYTES // 2**20} MiB, not a run's JSON")
        run = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror or error}") from None
    except ValueError as error:
        raise CommandError(f"{path}: not JSON ({error})") from None
    if not isinstance(run, dict):
        raise CommandError(f"{path}: not an evaluation run")
    return run


@subcommand("diff", "json", configure=diff_arguments, group="eval", standalone=True)
async def cmd_eval_diff(args: argparse.Namespace, deps: None) -> None:
    """two evaluation runs compared question by question: means, questions won and lost"""
    from functools import partial

    from bench.diff import diff_runs, show_diff
    from cli.output import print_result

    before, after = read_run(args.before), read_run(args.after)
    if before.get("benchmark") != after.get("benchmark"):
        raise CommandError(
            f"not the same benchmark: {before.get('benchmark')} and {after.get('benchmark')}"
        )
    try:
        view = "key" if args.key else "all"
        result = diff_runs(before, after, args.method, view, args.before_method)
    except ValueError as error:
        raise CommandError(str(error)) from None
    print_result(result, partial(show_diff, listed=max(0, args.show)), args.json)


def locomo_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="locomo JSON file")
    parser.add_argument("--conversations", help="sample ids, comma-separated (default: all)")
    parser.add_argument("--name", required=True, help="the LangSmith dataset to create or extend")


@subcommand("locomo-dataset", "json", configure=locomo_dataset_arguments, group="eval")
async def cmd_eval_locomo_dataset(args: argparse.Namespace, deps: Deps) -> None:
    """upload LoCoMo questions and their evidence as a LangSmith dataset"""
    import os

    from langsmith import Client

    from bench.langsmith_dataset import upload_dataset
    from bench.locomo import load_conversations
    from cli.output import out, print_json

    if not args.data.is_file():
        raise CommandError(f"{args.data}: no such file")
    if not os.environ.get("LANGSMITH_API_KEY"):
        raise CommandError("LANGSMITH_API_KEY is not set (and LANGSMITH_ENDPOINT if self-hosted)")
    wanted = set(args.conversations.split(",")) if args.conversations else None
    conversations = load_conversations(args.data, wanted)
    if missing := sorted((wanted or set()) - {c.sample_id for c in conversations}):
        raise CommandError(f"no such conversations in {args.data}: {', '.join(missing)}")
    upload = await asyncio.to_thread(upload_dataset, Client(), args.name, conversations)
    if args.json:
        print_json(vars(upload))
    else:
        out.print(
            f"LangSmith dataset [bold]{upload.dataset}[/] ({upload.dataset_id}): "
            f"{upload.created} examples added, {upload.already_there} already there"
        )


UNRELATED = (
    Path("tests/data/unrelated_questions.json"),
    Path("tests/data/everyday_questions.json"),
)
"""The questions no memory answers `eval floor` calibrates on: general-knowledge, everyday."""


def floor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="locomo JSON file")
    parser.add_argument(
        "--unrelated",
        type=Path,
        action="append",
        help="questions no memory answers (JSON: en, ru lists); repeat for several files "
        f"(default: {', '.join(str(path) for path in UNRELATED)})",
    )
    switch(
        parser,
        "--save",
        "write the floors into the data directory's calibration profile of the embedder",
    )


@subcommand("floor", "json", configure=floor_arguments, group="eval")
async def cmd_eval_floor(args: argparse.Namespace, deps: Deps) -> None:
    """calibrate the relevance floor of each retrieval signal, checked leave-one-out"""
    from bench.relevance_floor import eval_floor, save_profile, show_floor
    from cli.output import console, out, print_result

    unrelated = args.unrelated or list(UNRELATED)
    for path in (args.data, *unrelated):
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
    result = await eval_floor(
        args.data, unrelated, deps.settings, console=None if args.json else console
    )
    if args.save:
        result["profile"] = str(save_profile(result, deps.settings))
    print_result(result, show_floor, args.json)
    if args.save and not args.json:
        out.print(f"Calibration profile written: {result['profile']}")


def bench_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topics", default="1000,10000,100000", help="sizes, comma-separated")
    parser.add_argument("--out", type=Path, help="write the table and the plot here")


@subcommand("search", "json", configure=bench_search_arguments, group="bench")
async def cmd_bench_search(args: argparse.Namespace, deps: Deps) -> None:
    """search latency at scale, against brute force"""
    from bench.report import require_plots
    from bench.scale import bench_search
    from bench.scale_report import show_bench, write_bench
    from cli.output import print_result

    if args.out is not None:
        require_plots()
    result = await bench_search([int(size) for size in args.topics.split(",")])
    if args.out is not None:
        write_bench(result, args.out)
    print_result(result, show_bench, args.json)


def session_arguments(parser: argparse.ArgumentParser, turns: int) -> None:
    """The saved session a bench ingests, and how many questions it answers after it."""
    parser.add_argument("--session", type=Path, help="JSONL session (default: the example)")
    parser.add_argument("--turns", type=int, default=turns, help="questions answered after it")


def check_session(args: argparse.Namespace, settings: Settings) -> None:
    """Before any service is built: the session named is a file, and a question is asked."""
    if args.session is not None and not args.session.is_file():
        raise CommandError(f"{args.session}: no such file")
    if args.turns < 1:
        raise CommandError("--turns must be at least 1")


def bench_cost_arguments(parser: argparse.ArgumentParser) -> None:
    session_arguments(parser, turns=20)
    switch(
        parser,
        "--live",
        "archive each sitting once it is over, as the bot does (default: the whole session)",
    )


@subcommand("cost", "json", configure=bench_cost_arguments, group="bench", prepare=check_session)
async def cmd_bench_cost(args: argparse.Namespace, deps: Deps) -> None:
    """LLM calls and prompt tokens by agent, against a scripted model on loopback"""
    from bench.cost import bench_cost, show_cost
    from cli.output import print_result

    result = await bench_cost(args.session, args.turns, live=args.live)
    print_result(result, show_cost, args.json)


def bench_models_arguments(parser: argparse.ArgumentParser) -> None:
    session_arguments(parser, turns=3)
    parser.add_argument("--messages", type=int, help="ingest only its first N messages")


def check_models_run(args: argparse.Namespace, settings: Settings) -> None:
    """Before any service is built: a chat model is configured, the session passes
    `check_session`, and `--messages`, if given, is at least 1."""
    if not settings.llm_model:
        raise CommandError("no chat model configured (TOPICA_LLM_MODEL)")
    check_session(args, settings)
    if args.messages is not None and args.messages < 1:
        raise CommandError("--messages must be at least 1")


@subcommand(
    "models", "json", configure=bench_models_arguments, group="bench", prepare=check_models_run
)
async def cmd_bench_models(args: argparse.Namespace, deps: Deps) -> None:
    """each agent against the configured chat endpoint: accepted, repaired, fallbacks, tokens,
    latency"""
    from bench.models import bench_models, models_summary, models_table
    from cli.output import out, print_json, rows_table

    result = await bench_models(deps, args.session, args.messages, args.turns)
    if args.json:
        print_json(result)
        return
    out.print(rows_table(*models_table(result)))
    out.print(models_summary(result), markup=False)
