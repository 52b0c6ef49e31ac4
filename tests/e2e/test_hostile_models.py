"""Text a broken provider may send, made valid where it enters Topica: a lone UTF-16
surrogate (the JSON escape `\\ud800`) in a streamed answer and in a tool call's
arguments. `topica ask --stream` exits 0 with the answer, the bot sends it and stores
it, and no traceback is logged."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.deps import Deps
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call
from tests.support.paths import ROOT
from tests.support.processes import untraced_environment

pytestmark = pytest.mark.timeout(120)

ALICE = FakeUser(101, "Alice", "en")
BROKEN = "Half an emoji \ud83d and a lone \udc00 surrogate, then the rest of the answer."
VALID = "Half an emoji \ufffd and a lone \ufffd surrogate, then the rest of the answer."


def script_broken_answer(server: ScriptedOpenAI) -> None:
    server.script(
        tool_call("search_history", {"query": "Lisbon \ud800 trip"}, pace_s=0.01),
        reply(BROKEN, pace_s=0.01),
    )


async def test_ask_stream_with_a_lone_surrogate_exits_0_with_the_answer(
    server: ScriptedOpenAI, tmp_path: Path
) -> None:
    script_broken_answer(server)
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "cli.main", "ask", "What about Lisbon?", "--stream"),
        *("--data-dir", str(tmp_path)),
        env=untraced_environment()
        | {
            "TOPICA_LLM_BASE_URL": server.base_url,
            "TOPICA_LLM_API_KEY": "test",
            "TOPICA_RESPONDER_MODEL": "scripted",
            "TOPICA_LLM_MAX_RETRIES": "0",
        },
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, stderr.decode()[-2000:]
    assert VALID in stdout.decode()
    assert "Traceback" not in stderr.decode()


async def test_the_bot_sends_and_stores_an_answer_with_a_lone_surrogate(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    script_broken_answer(server)
    caplog.set_level(logging.WARNING)
    async with running_bot(
        make_deps,
        [ALICE],
        models={"responder": server.chat_model(timeout=30)},
        turn_wait_s=0.1,
        draft_interval_s=0.2,
    ) as running:
        running.api.send_text(ALICE, "What about Lisbon?")
        [answer] = await running.api.wait_for_sent(ALICE.id, 1, within_s=60)
        stored = [row["content"] for row in running.deps.store.messages.all_of(ALICE.id)]
    assert answer.result["text"] == VALID
    assert stored == ["What about Lisbon?", VALID]
    assert not [record for record in caplog.records if record.exc_info]
    assert "surrogate" not in caplog.text
