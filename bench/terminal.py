"""The evaluation's summary on a terminal (`topica eval locomo`, `topica eval beam`)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from bench.report import CROSS_VALIDATION_HEADER, cross_validation_rows
from bench.tables import benchmark, fraction, number, table_console


def show_eval(result: dict[str, Any], console: Console | None = None) -> None:
    """The overall table and each conversation's recall at the budget, for people."""
    console = console or table_console()
    budget, ks = result["budget"], result["ks"]
    table = Table(
        title=f"{benchmark(result)} retrieval (recall_all at {budget} tokens and at k units)",
        box=box.SIMPLE,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    columns = [
        ("method", "label"),
        (f"{budget}t", "recall_all_at_budget"),
        ("any", "recall_any_at_budget"),
        *((f"@{k}", f"recall_all_at_{k}") for k in ks),
        ("ndcg", "ndcg_at_10"),
        ("tokens", "mean_tokens"),
        ("p50ms", "p50_ms"),
        ("p95ms", "p95_ms"),
        ("llm/q", "llm_calls_per_question"),
    ]
    for index, (title, _) in enumerate(columns):
        table.add_column(title, justify="left" if index == 0 else "right", no_wrap=True)
    for name, m in result["methods"].items():
        cells = [name]
        for _, key in columns[1:]:
            value = m.get(key)
            if key == "mean_tokens":
                cells.append(number(value))
            elif key.endswith("_ms") or key == "llm_calls_per_question":
                cells.append(number(value, 1))
            else:
                cells.append(fraction(value))
        table.add_row(*cells)
    console.print(table)
    per_conversation = Table(
        title=f"recall_all at {budget} tokens per conversation", box=box.SIMPLE
    )
    per_conversation.add_column("method", no_wrap=True)
    for sample_id in result["conversations"]:
        per_conversation.add_column(sample_id, justify="right")
    for name in result["methods"]:
        per_conversation.add_row(
            name,
            *(
                fraction(c["methods"].get(name, {}).get("recall_all_at_budget"))
                for c in result["conversations"].values()
            ),
        )
    console.print(per_conversation)
    if "cross_validation" in result:
        view = Table(title="leave one conversation out (Topica's excerpt weights)", box=box.SIMPLE)
        for title in CROSS_VALIDATION_HEADER:
            view.add_column(title, justify="right")
        for row in cross_validation_rows(result["cross_validation"]):
            view.add_row(*row)
        console.print(view)
    ingest, evidence = result["ingest"], result["evidence"]
    reused = ingest.get("reused", 0)
    console.print(
        f"{ingest['messages']} messages → {ingest['topics']} topics in "
        f"{ingest['seconds']:.0f} s"
        + (f" ({reused} of {ingest['conversations']} stored before and reused)" if reused else "")
        + f", {ingest['llm_calls_per_message']:.3f} LLM calls and "
        f"{ingest['prompt_tokens_per_message']:.1f} prompt tokens per message; "
        f"{evidence['evaluated']}/{evidence['questions']} questions evaluated, "
        f"{evidence['malformed_entries']} malformed and {evidence['unknown_ids']} unknown "
        "evidence ids."
    )
