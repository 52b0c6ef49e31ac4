"""`topica bench models`: how each agent fares with the configured chat endpoint.

A saved session (by default the bundled example, optionally its first messages only) is
ingested into a temporary data directory and questions about it are answered, every
agent asking the configured endpoint with its configured capabilities and token limits.
Every agent call's outcome is taken from `nodes.shared.agent.LEDGER`: per agent, the
calls, the share of replies accepted as they came, the share repaired (a tool call
written as content), the fallbacks by reason, the prompt and completion tokens the
endpoint reported, and the latency p50/p95; per turn, its time and whether it ran past
`TOPICA_TURN_DEADLINE_S`. A tiny local model's table is the floor a real deployment
must beat (docs/models.md).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from app.memory import ingest
from app.turns import run_turn
from bench.cost import USER, example_questions, example_session
from bench.metrics import percentile
from core.deps import Deps
from nodes.shared.agent import LEDGER, AgentCall
from stores.saved_sessions import read_session
from stores.services import build_deps


def agent_rows(calls: list[AgentCall]) -> dict[str, dict[str, Any]]:
    """Per agent: calls, accepted and repaired shares, repairs and fallbacks by kind,
    tokens, latency p50/p95 (seconds)."""
    grouped: dict[str, list[AgentCall]] = defaultdict(list)
    for call in calls:
        grouped[call.agent].append(call)
    rows = {}
    for agent, made in sorted(grouped.items()):
        outcomes = Counter(call.outcome for call in made)
        latencies = [call.latency_s for call in made]
        rows[agent] = {
            "calls": len(made),
            "accepted": outcomes.pop("accepted", 0) / len(made),
            "repaired": outcomes.pop("repaired", 0) / len(made),
            "fallbacks": dict(sorted(outcomes.items())),
            "repairs": dict(
                sorted(Counter(kind for call in made for kind in call.repairs).items())
            ),
            "prompt_tokens": sum(call.prompt_tokens for call in made),
            "completion_tokens": sum(call.completion_tokens for call in made),
            "latency_p50_s": percentile(latencies, 50),
            "latency_p95_s": percentile(latencies, 95),
        }
    return rows


async def bench_models(
    configured: Deps, session: Path | None = None, messages: int | None = None, turns: int = 3
) -> dict[str, Any]:
    """Ingest the session's first `messages` (all if None) into a temporary data directory
    and answer `turns` questions, with `configured`'s settings and encoder; the agents'
    table and the turns' times."""
    settings = configured.settings
    rows = read_session(session or example_session())[:messages]
    directory = Path(tempfile.mkdtemp(prefix="topica-bench-models-"))
    deps = build_deps(
        settings.model_copy(update={"data_dir": directory}), embedder=configured.embedder
    )
    LEDGER.clear()
    try:
        started = time.monotonic()
        await ingest(deps, rows, USER)
        ingest_s = time.monotonic() - started
        turn_s: list[float] = []
        late = 0
        for question in example_questions(turns):
            started = time.monotonic()
            result = await run_turn(deps, USER, question)
            turn_s.append(time.monotonic() - started)
            late += bool(result.get("deadline_exceeded"))
    finally:
        deps.close()
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "endpoint": settings.llm_base_url,
        "model": settings.llm_model,
        "messages": len(rows),
        "ingest_s": ingest_s,
        "turns": len(turn_s),
        "turn_p50_s": percentile(turn_s, 50),
        "turn_p95_s": percentile(turn_s, 95),
        "past_deadline": late,
        "deadline_s": settings.turn_deadline_s,
        "agents": agent_rows(LEDGER.calls()),
    }


def models_table(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The agents' table: header and rows, as text."""
    header = ["agent", "calls", "accepted", "repaired", "fallbacks", "prompt tok",
              "completion tok", "p50 s", "p95 s"]  # fmt: skip
    body = []
    for agent, row in result["agents"].items():
        fallbacks = ", ".join(f"{reason} {count}" for reason, count in row["fallbacks"].items())
        kinds = ", ".join(f"{kind} {count}" for kind, count in row.get("repairs", {}).items())
        repaired = f"{row['repaired']:.0%}" + (f" ({kinds})" if kinds else "")
        body.append([
            agent, str(row["calls"]), f"{row['accepted']:.0%}", repaired,
            fallbacks or "–", str(row["prompt_tokens"]), str(row["completion_tokens"]),
            f"{row['latency_p50_s']:.1f}", f"{row['latency_p95_s']:.1f}",
        ])  # fmt: skip
    return header, body


def models_summary(result: dict[str, Any]) -> str:
    return (
        f"{result['messages']} messages ingested in {result['ingest_s']:.1f} s; "
        f"{result['turns']} turns: p50 {result['turn_p50_s']:.1f} s, "
        f"p95 {result['turn_p95_s']:.1f} s; {result['past_deadline']} past the "
        f"{result['deadline_s']:g} s deadline"
    )
