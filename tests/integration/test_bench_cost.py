"""`topica bench cost` on a small session: what the application counted is what the
scripted server received, agent by agent."""

from __future__ import annotations

import pytest

from bench.cost import bench_cost, cost_rows, cost_summary, told_sittings
from core.records import parse_timestamp
from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.timeout(300)


async def test_counts_match_the_servers_request_log() -> None:
    result = await bench_cost(EXAMPLES / "demo_session.jsonl", turns=2)

    server = result["server"]
    counted = {
        agent: row["calls"]
        for stage in ("archiving", "turn")
        for agent, row in result[stage]["by_agent"].items()
    }
    prompt = {
        agent: sum(
            result[stage]["by_agent"].get(agent, {}).get("prompt_tokens", 0)
            for stage in ("archiving", "turn")
        )
        for agent in counted
    }
    assert counted == server["calls"]
    assert prompt == server["prompt_tokens"]
    # The session's nine sittings (196 messages, under 25,000 characters) are one chunk,
    # split in one call; the Archivist reads a run's topics (ten at most) in one call;
    # every turn enriches, reranks in two turns (tool call, then the choice) and answers.
    archiving = result["archiving"]["by_agent"]
    assert archiving["splitter"]["calls"] == result["chunks"] == 1
    # Ten-message runs inside each of the nine sittings (bench.llm_server): 22 topics, whose
    # facts are all extracted, ten topics to a run, in three calls.
    assert result["topics"] == 22
    assert archiving["archivist"]["calls"] == 3
    turn = result["turn"]["by_agent"]
    assert (turn["enricher"]["calls"], turn["reranker"]["calls"]) == (2, 4)
    assert turn["responder"]["calls"] == 2
    assert result["archived_messages"] == result["messages"] == 196
    assert result["archiving"]["calls_per_100_messages"] == pytest.approx(
        100 * result["archiving"]["calls"] / 196
    )
    header, rows = cost_rows(result)
    assert len(rows) == len(archiving) + len(turn) and len(header) == len(rows[0])
    assert "LLM calls per 100 archived messages" in " ".join(cost_summary(result))


async def test_live_archiving_costs_a_splitter_and_an_archivist_call_a_sitting() -> None:
    result = await bench_cost(EXAMPLES / "demo_session.jsonl", turns=1, live=True)

    archiving = result["archiving"]["by_agent"]
    assert result["mode"] == "live, sitting by sitting"
    assert result["sittings"] == result["chunks"] == 9
    assert archiving["splitter"]["calls"] == 9
    # A sitting's topics (three at most here) fit in one Archivist call.
    assert archiving["archivist"]["calls"] == 9
    assert result["archived_messages"] == 196
    assert result["server"]["calls"]["archivist"] == 9
    # Each sitting was archived an interval after it was over, not when the next began.
    delay = result["archiving"]["delay_hours"]
    assert delay["p50"] >= 1.0 and delay["max"] <= 1.0 + longest_sitting_hours()


def longest_sitting_hours() -> float:
    from core.settings import Settings
    from stores.saved_sessions import read_session

    session = read_session(EXAMPLES / "demo_session.jsonl")
    sittings = told_sittings(session, Settings(_env_file=None))
    return (
        max(
            (parse_timestamp(s[-1]["created_at"]) - parse_timestamp(s[0]["created_at"])).seconds
            for s in sittings
        )
        / 3600
    )


async def test_batched_live_archiving_reads_several_sittings_a_call(monkeypatch) -> None:
    """`TOPICA_ARCHIVE_BATCH_MESSAGES=60` with a week's longest wait: finished sittings wait
    for one another, so the nine sittings cost three splitter calls; the last ones, which
    no later sitting joins, are archived once the first of them has waited a week."""
    monkeypatch.setenv("TOPICA_ARCHIVE_BATCH_MESSAGES", "60")
    monkeypatch.setenv("TOPICA_ARCHIVE_MAX_WAIT", "P7D")
    result = await bench_cost(EXAMPLES / "demo_session.jsonl", turns=1, live=True)

    archiving = result["archiving"]
    assert result["sittings"] == 9 and result["chunks"] == 3
    assert archiving["by_agent"]["splitter"]["calls"] == 3
    assert result["archived_messages"] == 196
    assert archiving["calls"] == 6  # a sitting by itself: 9 + 9
    assert 24 * 7 - 1 <= archiving["delay_hours"]["max"] <= 24 * 7 + 1
