"""`topica bench cost`: LLM calls and tokens of the memory graph and of answered turns.

A saved session (by default the bundled example) is ingested and archived, then N
questions about it are answered, with every agent pointed at an OpenAI-compatible
server on loopback (`bench.llm_server`) that answers each agent validly. Counted on the
application's side (a LangChain callback on every run: calls, and the tokens each
reply's usage reports), by agent:

- archiving: LLM calls per 100 archived messages, prompt and completion tokens per
  archived message;
- turns: calls per turn, and prompt and completion tokens per answered turn (p50/p95).

`live=True` archives the session as the running bot does: messages are stored one by
one, each at its time, and the bot's memory worker runs whenever something may have become
ready (`tell_live`), so a sitting (messages until a pause of `TOPICA_CHUNK_INTERVAL`) is
archived once it has been over for that long, on its own (with
`TOPICA_ARCHIVE_BATCH_MESSAGES`, once enough are ready or the oldest has waited
`TOPICA_ARCHIVE_MAX_WAIT`). Every message is archived in the end and every call counted;
the hours each waited are reported.
Without it the session is ingested whole (a saved session, or a backlog), and a chunk
holds every finished sitting that fits.

The server's own request log is reported beside it (`server`): the two must agree.
Token counts are the server's approximation (about four characters a token), the same
the context budgets use, so they compare prompts, not a provider's bill.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult

from app.memory import archive_user, ingest
from app.turns import run_turn
from bench.llm_server import MODEL_PREFIX, AgentServer
from bench.metrics import percentile
from bench.usage import counting_all
from core.deps import Deps
from core.records import NewMessage, parse_timestamp
from core.settings import AGENTS, Settings
from nodes.memory.chunking import sittings
from stores.saved_sessions import read_session
from stores.services import build_deps

USER = 1
TARGET_CALLS_PER_100 = 3
TARGET_TURN_PROMPT_P95 = 8000


def example_session() -> Path:
    return Path(str(resources.files("graphs") / "examples" / "demo_session.jsonl"))


def example_questions(count: int) -> list[str]:
    path = resources.files("graphs") / "examples" / "demo_questions.json"
    questions = [item["question"] for item in json.loads(path.read_text(encoding="utf-8"))]
    return [questions[i % len(questions)] for i in range(count)]


class AgentUsage(BaseCallbackHandler):
    """Every chat-model call of every run: (agent, prompt tokens, completion tokens)."""

    run_inline = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []
        self._agents: dict[UUID, str] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        model = params.get("model") or params.get("model_name") or ""
        with self._lock:
            self._agents[run_id] = str(model).removeprefix(MODEL_PREFIX)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        prompt = completion = 0
        for generations in response.generations:
            for generation in generations:
                usage = (
                    getattr(generation.message, "usage_metadata", None)
                    if isinstance(generation, ChatGeneration)
                    else None
                )
                if usage:
                    prompt += usage.get("input_tokens", 0)
                    completion += usage.get("output_tokens", 0)
        with self._lock:
            self.calls.append((self._agents.pop(run_id, "?"), prompt, completion))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self.calls.append((self._agents.pop(run_id, "?"), 0, 0))


def bench_settings(data_dir: Path, base_url: str) -> Settings:
    models = {f"{agent}_model": f"{MODEL_PREFIX}{agent}" for agent in AGENTS}
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        llm_base_url=base_url,
        llm_api_key="bench",
        llm_max_retries=0,
        streaming=False,
        **models,
    )


def by_agent(calls: list[tuple[str, int, int]]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for agent, prompt, completion in calls:
        grouped[agent].append((prompt, completion))
    return {
        agent: {
            "calls": len(rows),
            "prompt_tokens": sum(p for p, _ in rows),
            "completion_tokens": sum(c for _, c in rows),
            "prompt_p50": percentile([p for p, _ in rows], 50),
            "prompt_p95": percentile([p for p, _ in rows], 95),
        }
        for agent, rows in sorted(grouped.items())
    }


def spread(values: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95)}


def told_sittings(messages: list[NewMessage], settings: Settings) -> list[list[NewMessage]]:
    """The session's sittings, in the order told (`nodes.memory.chunking.sittings`)."""
    return sittings(
        messages,
        interval_s=settings.chunk_interval.total_seconds(),
        max_gap_s=settings.topic_max_gap.total_seconds(),
        time_of=lambda message: parse_timestamp(message["created_at"]).timestamp(),
    )


async def tell_live(deps: Deps, messages: list[NewMessage]) -> tuple[int, list[float]]:
    """Store `messages` at their times, with a memory run at every moment the bot's worker
    could find something newly ready (a message's time, an interval after it, the longest
    wait after it), as its ticks would. The number of chunks archived, and for each
    message the hours from when it was written to the run that archived it."""
    settings = deps.settings
    times = [parse_timestamp(message["created_at"]).timestamp() for message in messages]
    interval, wait = (
        settings.chunk_interval.total_seconds(),
        settings.archive_max_wait.total_seconds(),
    )
    runs = {t + later for t in times for later in (interval, wait, interval + wait)}
    arrivals = [(clock, 1, index) for index, clock in enumerate(times)]
    # At equal times the worker's run comes first: the message is not there yet.
    timeline = sorted([*((clock, 0, -1) for clock in runs), *arrivals])
    chunks = 0
    delays: list[float] = []
    for clock, arrives, index in timeline:
        if arrives:
            await asyncio.to_thread(deps.store.messages.add, USER, [messages[index]])
            continue
        archived = await archive_user(deps, USER, now_ts=clock)
        chunks += len(archived)
        for state in archived:
            delays.extend((clock - message["ts"]) / 3600 for message in state["chunk"])
    return chunks, delays


async def bench_cost(
    session: Path | None = None, turns: int = 20, *, live: bool = False
) -> dict[str, Any]:
    """Ingest `session` (`live`: sitting by sitting) and answer `turns` questions against
    the scripted server."""
    session = session or example_session()
    messages = read_session(session)
    directory = Path(tempfile.mkdtemp(prefix="topica-bench-cost-"))
    usage = AgentUsage()
    try:
        async with AgentServer() as server:
            deps = build_deps(bench_settings(directory, server.base_url))
            try:
                with counting_all(usage):
                    by_sitting = told_sittings(messages, deps.settings)
                    delays: list[float] = []
                    if live:
                        chunks, delays = await tell_live(deps, messages)
                    else:
                        chunks = (await ingest(deps, messages, USER))["chunks"]
                    topics = deps.store.topics.all_of(USER)
                    archiving = list(usage.calls)
                    per_turn = []
                    for question in example_questions(turns):
                        before = len(usage.calls)
                        await run_turn(deps, USER, question)
                        per_turn.append(usage.calls[before:])
            finally:
                deps.close()
            server_log = Counter(call.agent for call in server.log)
            server_prompt = Counter()
            for call in server.log:
                server_prompt[call.agent] += call.prompt_tokens
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    archived = sum(topic["message_count"] for topic in topics)
    memory = by_agent(archiving)
    memory_calls = sum(agent["calls"] for agent in memory.values())
    memory_prompt = sum(agent["prompt_tokens"] for agent in memory.values())
    memory_completion = sum(agent["completion_tokens"] for agent in memory.values())
    turn_prompt = [float(sum(p for _, p, _ in calls)) for calls in per_turn]
    turn_completion = [float(sum(c for _, _, c in calls)) for calls in per_turn]
    return {
        "session": session.name,
        "messages": len(messages),
        "mode": "live, sitting by sitting" if live else "saved session, ingested whole",
        "sittings": len(by_sitting),
        "chunks": chunks,
        "topics": len(topics),
        "archived_messages": archived,
        "turns": turns,
        "archiving": {
            "calls": memory_calls,
            "calls_per_100_messages": 100 * memory_calls / archived if archived else None,
            "prompt_tokens_per_message": memory_prompt / archived if archived else None,
            "completion_tokens_per_message": memory_completion / archived if archived else None,
            "by_agent": memory,
            "delay_hours": spread(delays) | {"max": max(delays, default=None)},
        },
        "turn": {
            "calls": spread([float(len(calls)) for calls in per_turn]),
            "prompt_tokens": spread(turn_prompt),
            "completion_tokens": spread(turn_completion),
            "by_agent": by_agent([call for calls in per_turn for call in calls]),
        },
        "targets": {
            "calls_per_100_messages": TARGET_CALLS_PER_100,
            "turn_prompt_tokens_p95": TARGET_TURN_PROMPT_P95,
        },
        "server": {"calls": dict(sorted(server_log.items())), "prompt_tokens": dict(server_prompt)},
    }


def cost_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["stage", "agent", "calls", "per", "prompt tokens p50 / p95 a call", "prompt total"]
    rows = []
    archived, turns = result["archived_messages"], result["turns"]
    for stage, key, unit, count in (
        ("archiving", "archiving", "100 msgs", archived / 100),
        ("turns", "turn", "turn", turns),
    ):
        for agent, row in result[key]["by_agent"].items():
            rows.append(
                [
                    stage,
                    agent,
                    str(row["calls"]),
                    f"{row['calls'] / count:.2f} / {unit}" if count else "-",
                    f"{row['prompt_p50']:.0f} / {row['prompt_p95']:.0f}",
                    f"{row['prompt_tokens']:,}",
                ]
            )
    return header, rows


def cost_summary(result: dict[str, Any]) -> list[str]:
    archiving, turn = result["archiving"], result["turn"]
    return [
        f"{result['messages']} messages ({result['mode']}), {result['sittings']} sittings, "
        f"{result['chunks']} chunks, "
        f"{result['archived_messages']} archived; {result['turns']} turns.",
        f"Archiving: {archiving['calls_per_100_messages']:.1f} LLM calls per 100 archived "
        f"messages (target ≤ {TARGET_CALLS_PER_100}), "
        f"{archiving['prompt_tokens_per_message']:.0f} prompt and "
        f"{archiving['completion_tokens_per_message']:.0f} completion tokens per message.",
        *(
            [
                f"A message waited {delay['p50']:.1f} h for its archiving (p50; p95 "
                f"{delay['p95']:.1f} h, at most {delay['max']:.1f} h)."
            ]
            if (delay := archiving["delay_hours"])["max"] is not None
            else []
        ),
        f"A turn: {turn['calls']['p50']:.0f} calls (p50); prompt tokens p50 "
        f"{turn['prompt_tokens']['p50']:.0f} / p95 {turn['prompt_tokens']['p95']:.0f} "
        f"(target p95 ≤ {TARGET_TURN_PROMPT_P95:,}); completion p50 "
        f"{turn['completion_tokens']['p50']:.0f} / p95 {turn['completion_tokens']['p95']:.0f}.",
    ]


def show_cost(result: dict[str, Any], console=None) -> None:
    from rich import box
    from rich.table import Table

    from bench.tables import table_console

    console = console or table_console()
    header, rows = cost_rows(result)
    table = Table(title="LLM calls and prompt tokens by agent", box=box.SIMPLE)
    for index, column in enumerate(header):
        table.add_column(column, justify="left" if index < 2 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for line in cost_summary(result):
        console.print(line)
