"""`topica bench models` against an endpoint that answers every agent validly
(`bench.llm_server`): every call is counted, accepted, and timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cost import bench_settings
from bench.llm_server import AgentServer
from bench.models import agent_rows, bench_models, models_table
from core.ports import Embedder
from nodes.shared.agent import AgentCall
from stores.services import build_deps

pytestmark = pytest.mark.timeout(300)


async def test_every_agent_call_is_counted_with_its_outcome(tmp_path: Path, embedder: Embedder):
    async with AgentServer() as server:
        settings = bench_settings(tmp_path / "configured", server.base_url)
        deps = build_deps(settings.model_copy(update={"llm_model": "any"}), embedder=embedder)
        try:
            result = await bench_models(deps, messages=40, turns=2)
        finally:
            deps.close()
    agents = result["agents"]
    assert {"splitter", "archivist", "enricher", "reranker", "responder"} <= set(agents)
    for row in agents.values():
        assert row["calls"] >= 1 and row["accepted"] == 1.0 and row["fallbacks"] == {}
        assert row["prompt_tokens"] > 0 and row["latency_p95_s"] >= row["latency_p50_s"] >= 0
    assert agents["reranker"]["calls"] == 4, "two reranker turns for each question"
    assert result["turns"] == 2 and result["past_deadline"] == 0
    header, rows = models_table(result)
    assert len(rows) == len(agents) and all(len(row) == len(header) for row in rows)


def test_the_table_shows_each_agents_repairs_and_fallbacks_by_kind():
    calls = [
        AgentCall("splitter", "repaired", 10, 5, 1.0, ("json_repaired", "truncated")),
        AgentCall("splitter", "accepted", 10, 5, 2.0),
        AgentCall("reranker", "unforced_call", 0, 0, 0.0),
    ]
    result = {"agents": agent_rows(calls)}
    assert result["agents"]["splitter"]["repairs"] == {"json_repaired": 1, "truncated": 1}
    _, rows = models_table(result)
    assert rows[0][:5] == ["reranker", "1", "0%", "0%", "unforced_call 1"]
    assert rows[1][3] == "50% (json_repaired 1, truncated 1)"
