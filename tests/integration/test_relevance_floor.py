"""The relevance floor in a real turn: a question memory holds nothing on is answered
"nothing in memory", without calling the reranker; a question it holds is recalled as
before. Real SQLite, Chroma and encoder, the default (calibrated) floors; the reranker is
a scripted model on loopback, so its requests are counted."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.memory import archive_user
from app.turns import run_turn
from core.deps import Deps
from nodes.response.offline_answer import WORDING
from stores.saved_sessions import read_session
from tests.support.openai_server import ScriptedOpenAI, reply
from tests.support.paths import THREE_SITTINGS as SESSION

pytestmark = pytest.mark.timeout(180)

USER = 1
NOW = "2026-03-20T10:00:00+00:00"


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("What is the capital of France?", "en"),  # the example
        ("Who discovered penicillin?", "en"),  # not in the calibration set
        ("Кто открыл пенициллин?", "ru"),
    ],
)
async def test_an_unrelated_question_gets_nothing_and_the_reranker_is_not_called(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, question: str, language: str
) -> None:
    deps = make_deps(models={"reranker": server.chat_model()})
    deps.indexer.store_messages(USER, read_session(SESSION))
    await archive_user(deps, USER, archive_all=True)

    result = await run_turn(deps, USER, question, now_iso=NOW)

    assert server.chat_requests == []
    assert result["fallback"] == "no_candidates"
    assert result["topics"] == []
    assert result["answer"] == WORDING[language].nothing


async def test_a_question_memory_holds_still_reaches_the_reranker(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"reranker": server.chat_model()})
    deps.indexer.store_messages(USER, read_session(SESSION))
    await archive_user(deps, USER, archive_all=True)
    server.script(reply(json.dumps({"topics": []})))

    result = await run_turn(deps, USER, "Что сказал ветеринар про Марципана?", now_iso=NOW)

    assert len(server.chat_requests) == 1
    assert result["fallback"] != "no_candidates"
