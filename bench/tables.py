"""Plain formatting shared by the evaluation's reports: labels, numbers, tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console

METHOD_LABELS = {
    "topica": "Topica",
    "topica_topics": "Topica, whole topics",
    "message_rag": "message vectors",
    "bm25": "BM25 messages",
    "hybrid_messages": "hybrid messages",
    "hybrid_neighbours": "hybrid + neighbours",
    "session": "sessions",
    "full_context": "full context",
}


def label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def benchmark(result: dict[str, Any]) -> str:
    return result.get("benchmark", "LoCoMo")


def grouping(result: dict[str, Any]) -> str:
    return result["setup"].get("grouping", "category")


def fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def number(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table_console() -> Console:
    """Stdout for tables: a terminal's own width; piped or redirected, wide enough that
    rows stay on one line instead of rich's default 80 columns."""
    console = Console()
    return console if console.is_terminal else Console(width=200)
