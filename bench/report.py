"""The evaluation's outputs: a Markdown report, the JSON and PNG plots."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.tables import benchmark, fraction, grouping, label, markdown_table, number
from core.errors import ConfigurationError


def abstention_section(result: dict[str, Any]) -> list[str]:
    """Questions memory cannot answer: the share each method recalls nothing for, beside
    the share of answerable questions it turns away (none for benchmarks without them)."""
    methods = result["methods"]
    if not any((m.get("abstention") or {}).get("questions") for m in methods.values()):
        return []
    rows = [
        [
            label(name),
            str(m["abstention"]["questions"]),
            fraction(m["abstention"]["recalled_nothing"]),
            fraction(m.get("turned_away")),
        ]
        for name, m in methods.items()
    ]
    return [
        "## Abstention",
        "",
        "Questions memory holds nothing about: the share for which the method's context "
        "recalls nothing (it says memory holds nothing), beside the share of answerable "
        "questions it turns away the same way.",
        "",
        markdown_table(["method", "questions", "recalled nothing", "answerable turned away"], rows),
        "",
    ]


def metric_rows(methods: dict[str, Any], budget: int, ks: Sequence[int]) -> list[list[str]]:
    rows = []
    for name, m in methods.items():
        rows.append(
            [
                label(name),
                fraction(m.get("recall_all_at_budget")),
                fraction(m.get("recall_any_at_budget")),
                *(fraction(m.get(f"recall_all_at_{k}")) for k in ks),
                fraction(m.get("recall_any_at_5")),
                fraction(m.get("ndcg_at_10")),
                number(m.get("mean_tokens")),
                number(m.get("mean_tokens_at_budget")),
                number(m.get("p50_ms"), 1),
                number(m.get("p95_ms"), 1),
                number(m.get("llm_calls_per_question"), 2),
                number(m.get("prompt_tokens_per_question")),
            ]
        )
    return rows


def metric_header(budget: int, ks: Sequence[int]) -> list[str]:
    return [
        "method",
        f"recall_all@{budget} tok",
        f"recall_any@{budget} tok",
        *(f"recall_all@{k}" for k in ks),
        "recall_any@5",
        "NDCG@10",
        "mean tokens",
        f"tokens used @{budget}",
        "p50 ms",
        "p95 ms",
        "LLM calls/q",
        "prompt tok/q",
    ]


def conversation_sections(result: dict[str, Any]) -> list[str]:
    """The report's per-conversation part: ingestion, evidence and metrics of each."""
    budget, ks = result["budget"], result["ks"]
    parts: list[str] = []
    for sample_id, conversation in result["conversations"].items():
        ingested, found = conversation["ingest"], conversation["evidence"]
        parts += [
            f"### {sample_id}",
            "",
            f"{ingested['messages']} messages in {ingested['sessions']} sessions → "
            f"{ingested['chunks']} chunks, {ingested['topics']} topics "
            f"({number(ingested['messages_per_topic'], 1)} messages/topic, "
            f"{ingested['merges']} merges), ingested in {ingested['seconds']:.1f} s with "
            f"{ingested['llm_calls']} LLM calls ({ingested['prompt_tokens']} prompt tokens). "
            f"Questions: {found['questions']}, evaluated {found['evaluated']}; malformed "
            f"evidence entries {found['malformed_entries']}, unknown evidence ids "
            f"{found['unknown_ids']}, without usable evidence {found['without_evidence']}.",
            "",
            markdown_table(
                metric_header(budget, ks), metric_rows(conversation["methods"], budget, ks)
            ),
            "",
        ]
    return parts


def markdown_report(result: dict[str, Any]) -> str:
    budget, ks, budgets = result["budget"], result["ks"], result["budgets"]
    setup, ingest, evidence = result["setup"], result["ingest"], result["evidence"]
    models = {agent: model for agent, model in setup["models"].items() if model}
    parts = [
        f"# {benchmark(result)} retrieval evaluation",
        "",
        f"{ingest['conversations']} conversations, {ingest['messages']} messages → "
        f"{ingest['topics']} topics; {evidence['evaluated']} answerable questions "
        f"evaluated. Budget {budget} tokens (`count_tokens_approximately`). Embedder "
        f"`{setup['embedder']}`; chat models: "
        + (", ".join(f"{a} `{m}`" for a, m in models.items()) or "none (the non-LLM path)")
        + f". Run time {result.get('seconds', 0):.0f} s.",
        "",
        method_setup(result),
        "",
        "## Overall",
        "",
        markdown_table(metric_header(budget, ks), metric_rows(result["methods"], budget, ks)),
        "",
        "recall_all: every evidence turn retrieved; recall_any: at least one. @k counts the "
        "top k units of each method (topics, messages, sessions); at a budget, the method's "
        "context is cut at that many tokens. Mean tokens: the content of the units the method "
        "itself puts in context (Topica: the reranker's selection; others: the top 5; full "
        "context: the whole conversation). Full context under a budget keeps the most recent "
        "turns. Latency includes encoding the question for methods that embed it.",
        "",
        "## Recall_all against the token budget",
        "",
        markdown_table(
            ["method", *(f"{b}" for b in budgets)],
            [
                [label(name), *(fraction(m["recall_all_by_budget"].get(str(b))) for b in budgets)]
                for name, m in result["methods"].items()
            ],
        ),
        "",
        "![recall against budget](recall_by_budget.png)",
        "",
        *key_sentence_section(result),
        f"## Recall_all at {budget} tokens by {grouping(result)}",
        "",
        category_table(result),
        "",
        *abstention_section(result),
        *quoted_section(result),
        "## Per conversation",
        "",
    ]
    parts += conversation_sections(result)
    if "cross_validation" in result:
        parts += ["## Leave one conversation out", "", cross_validation_text(result), ""]
    parts += [
        "## Ingestion cost",
        "",
        f"{ingest['seconds']:.0f} s for {ingest['messages']} messages; "
        f"{ingest['llm_calls']} LLM calls ({ingest['llm_calls_per_message']:.3f} per message), "
        f"{ingest['prompt_tokens']} prompt tokens ({ingest['prompt_tokens_per_message']:.1f} "
        "per message).",
        "",
        "## Evidence",
        "",
        f"{evidence['questions']} answerable questions: {evidence['evaluated']} "
        f"evaluated, {evidence['without_evidence']} left without usable evidence; "
        f"{evidence['malformed_entries']} malformed evidence entries in "
        f"{evidence['questions_with_malformed']} questions (split into ids where possible), "
        f"{evidence['unknown_ids']} evidence ids not in the conversation.",
        "",
        "Reranker fallbacks: "
        + (", ".join(f"{k} × {v}" for k, v in result["rerank_fallbacks"].items()) or "none"),
        "",
        "![latency](latency.png)",
        "",
    ]
    return "\n".join(parts)


def key_sentence_section(result: dict[str, Any]) -> list[str]:
    """recall_all against the budget in the key-sentence view (`bench.key_sentence`), for
    the methods that cut a message (the others score as in the plain view)."""
    budgets = result["budgets"]
    rows = [
        [label(name), *(fraction(m["recall_key_by_budget"].get(str(b))) for b in budgets)]
        for name, m in result["methods"].items()
        if m.get("recall_key_by_budget") and m["recall_key_by_budget"] != m["recall_all_by_budget"]
    ]
    if not rows:
        return [
            "Key-sentence view (`bench.key_sentence`): every method's equals its plain recall "
            "here (no evidence message was shown only in part).",
            "",
        ]
    return [
        "## Recall_all against the token budget, key-sentence view",
        "",
        markdown_table(["method", *(f"{b}" for b in budgets)], rows),
        "",
        "A message shown only by some of its passages counts when they hold its key sentence "
        "(the one sharing the most content words with the question and its reference "
        "answer); a message shown whole always counts.",
        "",
    ]


def quoted_section(result: dict[str, Any]) -> list[str]:
    """The memory-only answer's quotes (methods that have one), per conversation."""
    parts: list[str] = []
    for name, overall in result["methods"].items():
        if overall.get("recall_all_quoted") is None:
            continue
        rows = [
            [sample_id, str(m["questions"]), fraction(m["recall_all_quoted"])]
            for sample_id, conversation in result["conversations"].items()
            if (m := conversation["methods"].get(name))
        ]
        rows.append(["**all**", str(overall["questions"]), fraction(overall["recall_all_quoted"])])
        parts += [
            f"## {label(name)}: the memory-only answer",
            "",
            "What the answer without a responder model quotes "
            "(`nodes/response/offline_answer.py`): the share of questions whose every evidence "
            "turn is quoted.",
            "",
            markdown_table(["conversation", "questions", "evidence quoted"], rows),
            "",
        ]
    return parts


def cross_validation_rows(view: dict[str, Any]) -> list[list[str]]:
    rows = [
        [
            sample,
            str(fold["questions"]),
            fold["chosen"],
            fraction(fold["chosen_on_others"]),
            fraction(fold["held_out"]),
            fraction(fold["defaults_held_out"]),
            fraction(fold["best_held_out"]),
        ]
        for sample, fold in view["folds"].items()
    ]
    rows.append(
        [
            "all",
            str(sum(fold["questions"] for fold in view["folds"].values())),
            "",
            "",
            fraction(view["leave_one_out"]),
            fraction(view["defaults"]),
            fraction(view["oracle"]),
        ]
    )
    return rows


CROSS_VALIDATION_HEADER = [
    "held out",
    "questions",
    "chosen on the other 4",
    "its recall there",
    "its recall held out",
    "defaults held out",
    "best variant held out",
]


def cross_validation_text(result: dict[str, Any]) -> str:
    view = result["cross_validation"]
    grid = ", ".join(view["grid"])
    text = (
        f"Topica's excerpt weights, one moved at a time ({grid}): for each conversation the "
        f"variant with the best recall_all at {result['budget']} tokens on the others, "
        "scored on it.\n\n" + markdown_table(CROSS_VALIDATION_HEADER, cross_validation_rows(view))
    )
    if (key := view.get("key_view", {}).get(str(result["budget"]))) is None:
        return text
    chosen = Counter(fold["chosen"] for fold in key["folds"].values()).most_common()
    return text + (
        "\n\nChosen and scored on the key-sentence view instead: leave-one-out "
        f"{fraction(key['leave_one_out'])}, defaults {fraction(key['defaults'])}, best variant "
        f"per conversation {fraction(key['oracle'])} (chosen: "
        + ", ".join(f"{label} {count}" for label, count in chosen) + ")."
    )  # fmt: skip


def method_setup(result: dict[str, Any]) -> str:
    """The settings the figures depend on: consolidation, and each method's own."""
    setup = result["setup"]
    lines = [
        "Consolidation similarity threshold (non-LLM merges): "
        f"{setup.get('consolidation_similarity_threshold')}."
    ]
    for name, config in setup.get("methods", {}).items():
        if config:
            values = ", ".join(f"{key} {value}" for key, value in config.items())
            lines.append(f"{label(name)}: {values}.")
    return " ".join(lines)


def category_table(result: dict[str, Any]) -> str:
    names = result["setup"]["categories"]
    categories = sorted(
        {c for m in result["methods"].values() for c in m["recall_all_at_budget_by_category"]}
    )
    return markdown_table(
        [
            "method",
            *(
                f"{c} {names.get(c, '')}".strip() if c.isdigit() else names.get(c, c)
                for c in categories
            ),
        ],
        [
            [
                label(name),
                *(fraction(m["recall_all_at_budget_by_category"].get(c)) for c in categories),
            ]
            for name, m in result["methods"].items()
        ],
    )


def require_plots() -> None:
    """Plots need matplotlib, from the `bench` extra: say so (before a long run)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(
            "plots need matplotlib: install the bench extra "
            "(pip install -e '.[bench]', or make install)"
        ) from error


def save_plot(
    draw: Callable[[Any], str], path: Path, size: tuple[float, float], **legend: Any
) -> None:
    """Draw on fresh axes (`draw` returns the title) and save as PNG, headless."""
    require_plots()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=size)
    axes.set_title(draw(axes))
    axes.legend(**legend)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_recall(result: dict[str, Any], path: Path) -> None:
    def draw(axes: Any) -> str:
        for name, m in result["methods"].items():
            budgets = [int(b) for b in m["recall_all_by_budget"]]
            values = [m["recall_all_by_budget"][str(b)] for b in budgets]
            axes.plot(budgets, values, marker="o", label=label(name))
        axes.set_xscale("log", base=2)
        axes.set_xticks(result["budgets"], [str(b) for b in result["budgets"]])
        axes.set_xlabel("context budget (tokens)")
        axes.set_ylabel("recall_all (every evidence turn in context)")
        axes.set_ylim(0, 1)
        axes.grid(alpha=0.3)
        axes.axvline(result["budget"], color="grey", linestyle=":", linewidth=1)
        return f"{benchmark(result)}: evidence recall against the context budget"

    save_plot(draw, path, (8, 5))


def plot_latency(result: dict[str, Any], path: Path) -> None:
    def draw(axes: Any) -> str:
        names = list(result["methods"])
        p50 = [result["methods"][n]["p50_ms"] or 0 for n in names]
        p95 = [result["methods"][n]["p95_ms"] or 0 for n in names]
        positions = range(len(names))
        axes.bar([p - 0.2 for p in positions], p50, width=0.4, label="p50")
        axes.bar([p + 0.2 for p in positions], p95, width=0.4, label="p95")
        axes.set_xticks(list(positions), [label(n) for n in names], rotation=20, ha="right")
        axes.set_ylabel("retrieval latency per question (ms)")
        axes.grid(axis="y", alpha=0.3)
        return f"{benchmark(result)}: retrieval latency"

    save_plot(draw, path, (8, 4.5))


def write_report(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8"
    )
    (out / "report.md").write_text(markdown_report(result), encoding="utf-8")
    plot_recall(result, out / "recall_by_budget.png")
    plot_latency(result, out / "latency.png")
