"""LangSmith tracing of a real `topica` process: on with its variables (graph, node and a
hashed user as metadata), and no network connection at all without them."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest
from aiohttp import web

from bench.llm_server import serve_on_loopback
from core.tracing import user_key
from tests.support.paths import ROOT
from tests.support.paths import THREE_SITTINGS as SESSION
from tests.support.processes import untraced_environment

USER_ID = 918273645
MEMORY_NODES = {"load_chunk", "split", "segment", "validate", "embed", "save", "merge"}
pytestmark = pytest.mark.timeout(120)


async def test_runs_are_traced_with_graph_node_and_hashed_user(tmp_path: Path) -> None:
    bodies: list[bytes] = []

    async def collect(request: web.Request) -> web.Response:
        bodies.append(await request.read())
        if request.path.endswith("/info"):
            return web.json_response({"version": "0.10.0", "instance_flags": {}})
        return web.json_response({})

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_route("*", "/{tail:.*}", collect)
    runner = web.AppRunner(app)
    port = await serve_on_loopback(runner)
    try:
        environment = untraced_environment() | {
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_ENDPOINT": f"http://127.0.0.1:{port}",
            "LANGSMITH_API_KEY": "test-key",
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cli.main",
            "ingest",
            str(SESSION),
            "--user",
            str(USER_ID),
            "--data-dir",
            str(tmp_path),
            "--json",
            env=environment,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=100)
        assert process.returncode == 0, stderr.decode()[-2000:]
    finally:
        await runner.cleanup()

    traced = b"\n".join(bodies).decode("utf-8", errors="replace")
    assert f'"user":"{user_key(USER_ID)}"' in traced
    assert '"graph":"memory"' in traced
    # The application span holds the whole ingest (archiving and the graph runs inside
    # it, one trace), with only the pseudonym as its input.
    [ingest] = re.findall(
        r'"id":"([0-9a-f-]+)","start_time":"[^"]+","tags":\[\],'
        r'"dotted_order":"[^"]+","trace_id":"\1",[^}]*"name":"ingest"',
        traced,
    )
    assert f'"parent_run_id":"{ingest}"' in traced, "archiving is not inside the ingest span"
    assert f'"trace_id":"{ingest}","session_name":"default","name":"memory"' in traced
    assert f'{{"user":"{user_key(USER_ID)}"}}' in traced
    for node in MEMORY_NODES:
        assert f'"langgraph_node":"{node}"' in traced, node
    assert str(USER_ID) not in traced, "the raw user id leaked into a trace"


def test_no_connection_without_langsmith_variables(tmp_path: Path) -> None:
    import subprocess

    report = tmp_path / "connections.json"
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.audited_cli",
            str(report),
            "--",
            "ingest",
            str(SESSION),
            "--data-dir",
            str(tmp_path / "data"),
            "--json",
        ],
        env=untraced_environment(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert json.loads(finished.stdout)["messages"] == 60
    assert json.loads(report.read_text()) == []
