"""The scale benchmark: one small measurement end to end (real SQLite and Chroma)."""

from __future__ import annotations

import io

from rich.console import Console

from bench.scale import DIMENSIONS, measure_size
from bench.scale_report import show_bench, write_bench
from core.progress import ProgressBoard


async def test_a_small_size_is_measured_end_to_end(tmp_path, capsys) -> None:
    shown = io.StringIO()
    result = await measure_size(200, ProgressBoard(Console(file=shown, force_terminal=False)))
    lines = shown.getvalue().splitlines()
    searches = result["queries"]["search"]
    # Every stage shows its totals when it is done (periodic lines come on longer runs).
    assert any(line.startswith("200 topics: building the store: 248/248 topics") for line in lines)
    assert any(f"200 topics: searches: {searches}/{searches} queries" in line for line in lines)
    assert any(line.startswith("200 topics: numpy, bare Chroma: 2/2 baselines") for line in lines)
    assert result["topics"] == 200
    assert result["total_topics"] == 200 + 24 * 2  # others hold a quarter: 50 // 24 each
    assert result["users"] == 25
    assert result["messages"] == 2 * result["total_topics"]
    for stage in ("search", "retrieval", "numpy", "chroma_query", "query_encoding"):
        assert 0 < result[stage]["p50_ms"] <= result[stage]["p95_ms"], stage
    assert result["mean_candidates"] > 0
    costs = result["passage_embedding"]
    assert [cost["long_messages"] for cost in costs] == [1, 3, 10]
    assert costs[0]["passages"] > 1 and costs[-1]["passages"] >= 10 * costs[0]["passages"] - 10
    for cost in costs:
        assert 0 < cost["p50_ms"] <= cost["p95_ms"]
    assert result["peak_rss_mb"] > 0
    assert result["numpy"]["tracemalloc_peak_mb"] > 200 * DIMENSIONS * 4 / 2**20
    write_bench({"sizes": [result]}, tmp_path)
    written = (tmp_path / "bench.md").read_text()
    assert "| 200 | 248 |" in written
    ratio = result["search"]["p50_ms"] / result["chroma_query"]["p50_ms"]
    assert f"| {ratio:.1f} / " in written
    assert f"| 10 | {costs[-1]['passages']} |" in written
    assert (tmp_path / "bench_search.png").stat().st_size > 0
    capsys.readouterr()
    show_bench({"sizes": [result]})
    shown = capsys.readouterr().out
    # Redirected output is not cut to 80 columns: the row stays on one line.
    row = next(line for line in shown.splitlines() if line.strip().startswith("200 "))
    assert "248" in row and row.count(" / ") == 5
    assert "Passages of long messages embedded" in shown
