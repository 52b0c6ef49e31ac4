"""`topica bot` serves /metrics and /healthz, and the seeds' metrics move during a conversation.

A real `topica bot` process talks to the fake Bot API server on 127.0.0.1; the
test chats with it, lets the background worker archive the conversation, and
reads the Prometheus text the process serves.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.paths import ROOT
from tests.support.processes import environment_without, free_port

ALICE = FakeUser(101, "Alice", "en")
pytestmark = pytest.mark.timeout(180)


def sample(metrics: str, name: str, labels: str = "") -> float:
    """The value of one sample in Prometheus' text format (0 when absent)."""
    pattern = re.escape(name + (f"{{{labels}}}" if labels else "")) + r" ([0-9.e+-]+)$"
    found = re.search(pattern, metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


MOVING = [
    ("topica_topics_search_duration_seconds_count", ""),
    ("topica_topics_search_results_count", ""),
    ("topica_reranker_duration_seconds_count", ""),
    ("topica_reranker_candidates_input_count", ""),
    ("topica_topics_reranker_selected_count", ""),
    ("topica_rag_latency_seconds_count", 'source="auto"'),
    ("topica_message_telegram_duration_seconds_count", ""),
    ("topica_topics_extracted_total", ""),
    ("topica_splitter_duration_seconds_count", ""),
    ("topica_topics_size_chars_count", ""),
    ("topica_merger_duration_seconds_count", ""),
]
"""The metrics (and labels) a conversation and its archiving must move."""


async def converse(api: FakeBotAPI, client: httpx.AsyncClient, url: str) -> tuple[str, str]:
    """The metrics before Alice's conversation, and after its answers and its archiving."""
    before = (await client.get(f"{url}/metrics")).text
    for answered, text in enumerate(
        (
            "My cat Marzipan has kidney disease, the vet said renal diet.",
            "I also bought Asics Novablast shoes for the half-marathon.",
        ),
        start=1,
    ):
        api.send_text(ALICE, text)
        await api.wait_for_sent(ALICE.id, answered, within_s=60)
    api.send_text(ALICE, "What did the vet say about Marzipan?")
    await api.wait_for_sent(ALICE.id, 3, within_s=60)

    async def archived() -> str:
        while True:
            text = (await client.get(f"{url}/metrics")).text
            if sample(text, "topica_topics_extracted_total"):
                return text
            await asyncio.sleep(0.5)

    return before, await asyncio.wait_for(archived(), 60)


async def test_metrics_move_during_a_conversation(tmp_path: Path) -> None:
    port = free_port()
    async with FakeBotAPI() as api:
        environment = environment_without("TOPICA_") | {
            "TOPICA_TELEGRAM_TOKEN": api.token,
            "TOPICA_TELEGRAM_API_URL": api.base_url,
            "TOPICA_ALLOWED_USER_IDS": str(ALICE.id),
            "TOPICA_DATA_DIR": str(tmp_path / "data"),
            "TOPICA_TURN_WAIT_S": "0.2",
            "TOPICA_CHUNK_INTERVAL": "2",
            "TOPICA_MEMORY_WORKER_INTERVAL_S": "0.5",
            "TOPICA_METRICS_PORT": str(port),
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cli.main", "bot", env=environment, cwd=ROOT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            await api.wait_until(
                lambda: api.calls_of("getUpdates", ok_only=False), within_s=60, what="polling"
            )
            async with httpx.AsyncClient(timeout=5) as client:
                health = await client.get(f"{url}/healthz")
                assert health.status_code == 200
                assert health.json()["checks"] == {
                    "database": "ok",
                    "vectors": "ok",
                    "telegram": "ok",
                }
                before, after = await converse(api, client, url)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 60)
            finally:
                if process.returncode is None:
                    process.kill()

    moved = {
        name: (sample(before, name, labels), sample(after, name, labels)) for name, labels in MOVING
    }
    stuck = {name: values for name, values in moved.items() if values[1] <= values[0]}
    assert not stuck, f"metrics that did not move: {stuck}"
    # Every turn without a model records why the reranker fell back (no model, or no
    # candidates yet when nothing was archived).
    fallback_line = r'^topica_reranker_fallback_total\{reason="(\w+)"\} ([0-9.]+)$'
    fallbacks = re.findall(fallback_line, after, re.MULTILINE)
    assert sum(float(count) for _, count in fallbacks) >= 3, fallbacks
