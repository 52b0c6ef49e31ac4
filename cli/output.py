"""What the command line prints: tables and progress for people, JSON for machines."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table

console = Console(stderr=True)
"""Progress and errors (stderr)."""
out = Console(soft_wrap=True)
"""Results (stdout)."""


SHORT_ID = 12
"""The most characters of a message id a table shows; a longer one keeps its start."""


def short_id(value: object) -> str:
    """A message id as a table shows it: `turn-2202dcbf…` for a long one, so the table's
    id and summary columns keep their room at 80 columns (`--json` has the full ids)."""
    text = str(value)
    return text if len(text) <= SHORT_ID else text[: SHORT_ID - 1] + "…"


def message_range(start: object, end: object) -> str:
    return f"{short_id(start)}…{short_id(end)}"


def topics_table(views: Sequence[dict[str, Any]], title: str) -> Table:
    table = Table(title=title, show_lines=False, expand=True)
    table.add_column("id", justify="right", no_wrap=True)
    table.add_column("messages", max_width=2 * SHORT_ID + 1)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("date", no_wrap=True)
    table.add_column("summary", ratio=1, min_width=20)
    for view in views:
        table.add_row(
            str(view["id"]),
            message_range(view["start_msg_id"], view["end_msg_id"]),
            str(view["message_count"]),
            view["first_message_at"][:10],
            "\n".join(
                [view["summary"], *(f"↳ {title}" for title in view.get("conversations", []))]
            ),
        )
    return table


def rows_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A plain table of text cells, the first column left-aligned, the rest right."""
    table = Table()
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def llm_probe_table(result: dict[str, Any]) -> Table:
    """`topica doctor --llm`: each capability, honoured or not, and what came back."""
    table = Table(title=escape(f"{result['endpoint']} ({result['model']})"))
    for column in ("capability", "honoured", "reply"):
        table.add_column(column)
    for row in result["capabilities"]:
        honoured = "[green]yes[/]" if row["honoured"] else "[red]no[/]"
        table.add_row(row["capability"], honoured, escape(row["detail"]))
    return table


def doctor_table(reports: Sequence[dict[str, Any]]) -> Table:
    """`topica doctor`: per user and kind, records stored and indexed, and differences."""
    table = Table(title="Vector index against the store")
    for column in ("user", "kind", "stored", "indexed", "pending", "missing", "orphans"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    repairing = any("repaired" in report for report in reports)
    if repairing:
        table.add_column("repaired", justify="right")
    for report in reports:
        cells = [
            str(report["user_id"]),
            report["kind"],
            str(report["stored"]),
            str(report["indexed"]),
            str(report["pending"]),
            str(len(report["missing"])),
            str(len(report["orphans"])),
        ]
        table.add_row(*cells, *([str(report["repaired"])] if repairing else []))
    return table


def copy_table(copied: Sequence[Any]) -> Table:
    """`topica copy`: each table's rows on both sides."""
    table = Table(title="SQLite → PostgreSQL")
    for column in ("table", "SQLite rows", "PostgreSQL rows", ""):
        table.add_column(column, justify="left" if column == "table" else "right")
    for item in copied:
        mark = "[green]✓[/]" if item.verified else "[bold red]✗[/]"
        table.add_row(item.table, str(item.source_rows), str(item.target_rows), mark)
    return table


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))


def print_result(result: Any, show: Callable[[Any, Console], None], as_json: bool) -> None:
    """A command's result: as JSON on stdout (`--json`), else drawn by `show` on `out`."""
    if as_json:
        print_json(result)
    else:
        show(result, out)


def show_ingest(result: dict[str, Any], path: Path | str) -> None:
    """`ingest`'s and `archive`'s report: the topics, then one line of counts."""
    title = path.name if isinstance(path, Path) else path
    out.print(topics_table(result["topics"], f"Topics from {title}"))
    merges = len(result["merges"])
    out.print(
        f"[bold]{result['messages']}[/] messages ({result['new_messages']} new) in "
        f"{result['chunks']} chunks → [bold]{len(result['topics'])}[/] topics, "
        f"{merges} merged, {len(result['uncovered'])} uncovered; "
        f"splitter: {result['llm'] or 'embeddings (no LLM configured)'}; "
        f"facts: {result['facts_status'] or 'nothing new'}"
        + (f" ({result['facts_reason']})" if result["facts_reason"] else "")
        + (
            f"; {len(result['waiting'])} waiting (--all takes them)"
            if result.get("waiting")
            else ""
        )
    )


NO_MODEL_HINT = (
    "no language model is connected, so answers quote memory; to connect one set "
    "TOPICA_LLM_BASE_URL, TOPICA_LLM_MODEL and TOPICA_LLM_API_KEY (in .env: "
    "cp .env.example .env)"
)


def note_no_model(settings: Any) -> None:
    """Without a responder model, say once on stderr what to set to connect one."""
    if settings.model_for("responder") is None:
        console.print(f"[dim]{NO_MODEL_HINT}[/]", highlight=False)


def show_question(question: str) -> None:
    out.print(f"[bold cyan]?[/] {question}", highlight=False)


def show_sources(result: dict[str, Any]) -> None:
    """What the answer was made from: the recalled topics and why, then a line of figures."""
    table = Table(show_header=True, expand=True, box=None, padding=(0, 1))
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("topic", justify="right", no_wrap=True)
    table.add_column("messages", max_width=2 * SHORT_ID + 1)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("why", ratio=1, min_width=20)
    for rank, topic in enumerate(result["topics"], start=1):
        table.add_row(
            str(rank),
            str(topic["id"]),
            message_range(topic["start_msg_id"], topic["end_msg_id"]),
            f"{topic['score']:.3f}",
            topic["reason"],
        )
    if result["topics"]:
        out.print(table)
    sources = result.get("sources") or {}
    used = ", ".join(
        f"{len(sources[key])} {label}"
        for key, label in (
            ("facts", "facts"),
            ("people", "people"),
            ("earlier_messages", "earlier"),
        )
        if sources.get(key)
    )
    fallback = f"; reranker fallback: {result['fallback']}" if result["fallback"] else ""
    partial = "; stopped while written" if result.get("partial") else ""
    out.print(
        f"[dim]{result['context_tokens']} context tokens, {result['llm_calls']} LLM calls"
        f"{fallback}{partial}" + (f"; also used: {used}" if used else "") + "[/]"
    )


def show_turn(question: str, result: dict[str, Any]) -> None:
    show_question(question)
    show_sources(result)
    print_answer(result["answer"], out)
    out.print()


NEXT_QUESTION = "Какой подарок мы выбрали для мамы?"


def topica_command() -> str:
    """How to run this same `topica` from here: its name if it is the one on PATH."""
    here = Path(sys.executable).parent / "topica"
    on_path = shutil.which("topica")
    if on_path and Path(on_path).resolve() == here.resolve():
        return "topica"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


def show_next_steps(data_dir: Path | None, user_id: int) -> None:
    """What to try next on the demo's memory: ask, chat, Studio (`None`: it was removed)."""
    directory = shlex.quote(str(data_dir)) if data_dir else "DIR"
    topica = topica_command()
    user = f" --user {user_id}" if user_id != 1 else ""
    out.rule("[bold]Next[/]: the same memory, your questions")
    if data_dir is None:
        out.print(
            "This data directory was temporary and is removed now; "
            f"[bold]{topica} demo --keep[/] keeps it (DIR below) and prints these commands."
        )
    steps = (
        (f'{topica} ask "{NEXT_QUESTION}" --data-dir {directory}{user}', "one more question"),
        (f"{topica} chat --data-dir {directory}{user}", "a conversation that is remembered"),
        (f"make studio DATA_DIR={directory}", "LangGraph Studio on it (installs the dev tools)"),
    )
    for command, what in steps:
        out.print(f"  {escape(command)}  [dim]# {what}[/]", highlight=False)


def print_answer(answer: str, console: Console) -> None:
    """An answer: Markdown rendered on a terminal, the text as written when piped."""
    if console.is_terminal:
        console.print(Markdown(answer))
    else:
        console.print(answer, markup=False, highlight=False)


class AnswerPrinter:
    """Prints an answer while it is written (`on_text` of a turn), then finishes the line.

    On a terminal the answer is Markdown, rendered in place as it grows; piped, the text
    is printed as written. A model call that starts the text over (a reply after a tool
    round) begins anew; an answer that did not stream (a memory-only answer) is printed
    whole at the end."""

    def __init__(self, prompt: str = "", console: Console | None = None) -> None:
        self.prompt = prompt
        self.console = console or out
        self.shown = ""
        self.live: Live | None = None

    def start(self) -> None:
        self.shown = ""

    def __call__(self, text: str) -> None:
        if self.console.is_terminal:
            self._render(text)
            return
        if not self.shown:
            self.console.print(self.prompt, end="")
        if text.startswith(self.shown):
            self.console.print(text[len(self.shown) :], end="", markup=False, highlight=False)
        else:
            self.console.print("\n" + text, end="", markup=False, highlight=False)
        self.shown = text

    def _render(self, text: str) -> None:
        if self.live is None:
            self.console.print(self.prompt, end="")
            self.live = Live(console=self.console, auto_refresh=False, vertical_overflow="visible")
            self.live.start()
        self.live.update(Markdown(text), refresh=True)
        self.shown = text

    def finish(self, answer: str) -> None:
        if self.live is not None:
            self.live.update(Markdown(self.shown or answer), refresh=True)
            self.live.stop()
            self.live = None
        elif self.shown:
            self.console.print()
        else:
            self.console.print(self.prompt, end="")
            print_answer(answer, self.console)
        self.shown = ""
