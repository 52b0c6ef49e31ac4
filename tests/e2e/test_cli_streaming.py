"""`topica ask --stream` and `topica chat` print the answer while the model writes it.

A real `topica` process answers with the real `ChatOpenAI` from the scripted server on
loopback, which streams its reply a word every 50 ms. The test reads the process's stdout
as it comes: the first words must be there while the server is still sending the rest.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(120)

ANSWER = " ".join(f"word{index}" for index in range(40))
PACE_S = 0.05


def environment(server: ScriptedOpenAI, **extra: str) -> dict[str, str]:
    return untraced_environment() | {
        "TOPICA_LLM_BASE_URL": server.base_url,
        "TOPICA_LLM_API_KEY": "test",
        "TOPICA_RESPONDER_MODEL": "scripted",
        "TOPICA_LLM_MAX_RETRIES": "0",
        **extra,
    }


async def start(server: ScriptedOpenAI, data_dir: Path, *args: str, **extra: str):
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli.main",
        *args,
        "--data-dir",
        str(data_dir),
        env=environment(server, **extra),
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def read_until(stream: asyncio.StreamReader, text: str, timeout_s: float = 60) -> str:
    seen = b""
    async with asyncio.timeout(timeout_s):
        while text.encode() not in seen:
            chunk = await stream.read(256)
            assert chunk, f"the output ended before {text!r}: {seen.decode()!r}"
            seen += chunk
    return seen.decode()


async def test_ask_stream_prints_the_words_before_the_model_has_finished(tmp_path: Path):
    async with ScriptedOpenAI() as server:
        server.script(reply(ANSWER, pace_s=PACE_S))
        process = await start(server, tmp_path, "ask", "Say forty words", "--stream")

        early = await read_until(process.stdout, "word3")
        [stream] = server.streams
        assert not stream.completed, "the words were printed while the model still wrote"
        assert "word39" not in early

        rest, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, stderr.decode()[-2000:]
    printed = early + rest.decode()
    assert printed.count(ANSWER) == 1, "streamed once, not printed again at the end"
    assert "Say forty words" in printed and "LLM calls" in printed


async def test_chat_prints_each_answer_while_it_is_written(tmp_path: Path):
    async with ScriptedOpenAI() as server:
        server.script(reply(ANSWER, pace_s=PACE_S))
        process = await start(server, tmp_path, "chat")
        process.stdin.write(b"Say forty words\n")
        await process.stdin.drain()

        early = await read_until(process.stdout, "word3")
        assert not server.streams[0].completed
        process.stdin.close()
        rest, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, stderr.decode()[-2000:]
    assert (early + rest.decode()).count(ANSWER) == 1


async def test_chat_without_streaming_prints_the_whole_answer_once(tmp_path: Path):
    async with ScriptedOpenAI() as server:
        server.script(reply(ANSWER))
        process = await start(server, tmp_path, "chat", TOPICA_STREAMING="false")
        output, stderr = await asyncio.wait_for(
            process.communicate(b"Say forty words\n"), timeout=60
        )
    assert process.returncode == 0, stderr.decode()[-2000:]
    assert output.decode().count(ANSWER) == 1
    assert not server.chat_requests[0].json_body.get("stream")


async def test_ask_stream_and_json_together_is_a_usage_error(tmp_path: Path):
    async with ScriptedOpenAI() as server:
        process = await start(server, tmp_path, "ask", "hi", "--stream", "--json")
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 2
    assert "--stream" in stderr.decode()
    assert server.chat_requests == []
