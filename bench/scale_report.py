"""The tables and the plot of `topica bench search` (measured by `bench.scale`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.scale import MESSAGES_PER_TOPIC, OTHER_USERS, OTHER_USERS_SHARE


def bench_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = [
        "topics (user)",
        "topics (all)",
        "search p50/p95 ms",
        "retrieval p50/p95 ms",
        "numpy p50/p95 ms",
        "one Chroma query p50/p95 ms",
        "search ÷ Chroma p50/p95",
        "build s (SQLite + Chroma)",
        "build RSS MB",
        "peak RSS MB",
        "numpy peak MB",
    ]
    rows = []
    for size in result["sizes"]:
        rows.append(
            [
                f"{size['topics']:,}",
                f"{size['total_topics']:,}",
                f"{size['search']['p50_ms']:.1f} / {size['search']['p95_ms']:.1f}",
                f"{size['retrieval']['p50_ms']:.1f} / {size['retrieval']['p95_ms']:.1f}",
                f"{size['numpy']['p50_ms']:.2f} / {size['numpy']['p95_ms']:.2f}",
                f"{size['chroma_query']['p50_ms']:.1f} / {size['chroma_query']['p95_ms']:.1f}",
                f"{ratio(size, 'p50_ms'):.1f} / {ratio(size, 'p95_ms'):.1f}",
                f"{size['build_s']:.1f} ({size['sqlite_build_s']:.1f} + "
                f"{size['chroma_build_s']:.1f})",
                f"{size['build_rss_mb']:.0f}",
                f"{size['peak_rss_mb']:.0f}",
                f"{size['numpy']['tracemalloc_peak_mb']:.1f}",
            ]
        )
    return header, rows


def ratio(size: dict[str, Any], stat: str) -> float:
    """The search's latency in bare Chroma queries over the same vectors, at `stat`."""
    return size["search"][stat] / size["chroma_query"][stat]


def passage_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The local embedder scoring the passages of long messages (the first size's run)."""
    header = ["long messages", "passages", "embedding p50/p95 ms"]
    rows = [
        [
            str(cost["long_messages"]),
            str(cost["passages"]),
            f"{cost['p50_ms']:.0f} / {cost['p95_ms']:.0f}",
        ]
        for cost in result["sizes"][0]["passage_embedding"]
    ]
    return header, rows


def write_bench(result: dict[str, Any], out: Path) -> None:
    import json

    from bench.tables import markdown_table

    out.mkdir(parents=True, exist_ok=True)
    (out / "bench.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    header, rows = bench_rows(result)
    encoding = [size["query_encoding"]["p50_ms"] for size in result["sizes"]]
    text = [
        "# Search at scale (synthetic topics)",
        "",
        markdown_table(header, rows),
        "",
        f"One user's topics among {OTHER_USERS} other users holding "
        f"{OTHER_USERS_SHARE:.0%} as many; {MESSAGES_PER_TOPIC} messages per topic, all "
        "indexed. Search: `hybrid_search` (vectors and BM25 over topics and messages, RRF). "
        "Retrieval: `enrich → search → rerank` without an LLM. Both exclude encoding the "
        "query, which the local embedder does in "
        + ", ".join(f"{value:.0f}" for value in encoding)
        + " ms (p50) regardless of size. numpy: brute-force cosine top-50 over the user's "
        "topic vectors in memory. One Chroma query: the same vectors in a fresh collection, "
        "one vector query alone, right after each search (search runs four queries, two of "
        "them vector queries, plus id lookups and fusion).",
        "",
        "Scoring the passages of long messages against a query (the context assembly, "
        "`nodes.response.ranking.passages`), texts the local embedder has not seen:",
        "",
        markdown_table(*passage_rows(result)),
        "",
        "![latency against size](bench_search.png)",
        "",
    ]
    (out / "bench.md").write_text("\n".join(text), encoding="utf-8")
    plot_bench(result, out / "bench_search.png")


def plot_bench(result: dict[str, Any], path: Path) -> None:
    from bench.report import save_plot

    sizes = [size["topics"] for size in result["sizes"]]

    def draw(axes: Any) -> str:
        lines = [("search", "search stage", "o"), ("retrieval", "whole retrieval (no LLM)", "o")]
        lines += [("numpy", "numpy brute force", "s"), ("chroma_query", "one Chroma query", "^")]
        for key, name, marker in lines:
            for stat, style in (("p50_ms", "-"), ("p95_ms", "--")):
                values = [size[key][stat] for size in result["sizes"]]
                axes.plot(sizes, values, style + marker, label=f"{name} {stat[:3]}")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("topics of the user")
        axes.set_ylabel("latency (ms)")
        axes.grid(alpha=0.3, which="both")
        return "Search latency against memory size"

    save_plot(draw, path, (7, 4.5), fontsize=8)


def show_bench(result: dict[str, Any], console=None) -> None:
    from rich import box
    from rich.table import Table

    from bench.tables import table_console

    console = console or table_console()
    header, rows = bench_rows(result)
    table = Table(title="Search at scale (synthetic topics)", box=box.SIMPLE)
    for index, column in enumerate(header):
        widest = max(len(row[index]) for row in rows)
        table.add_column(column, justify="left" if index == 0 else "right", min_width=widest)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    header, rows = passage_rows(result)
    passages = Table(title="Passages of long messages embedded", box=box.SIMPLE)
    for column in header:
        passages.add_column(column, justify="right")
    for row in rows:
        passages.add_row(*row)
    console.print(passages)
