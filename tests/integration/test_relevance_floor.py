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
from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage
from nodes.response.gate import named_in_memory
from nodes.response.offline_answer import WORDING
from nodes.response.search import topic_candidates
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


UNREACHABLE = {
    "message_vector_floor": 2.0,
    "message_vector_floor_base": 2.0,
    "topic_vector_floor": 2.0,
    "topic_vector_floor_base": 2.0,
    "message_bm25_floor": 1e9,
    "topic_bm25_floor": 1e9,
}
"""Floors no score reaches: what clears the gate then is a name alone."""


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("Who is Anthony?", True),  # one message names him, at a sentence's start
        ("Что сказал ветеринар про Марципана?", True),  # memory says "Марципан", "Марципану"
        ("Who is Boris?", False),  # nobody of that name
        ("Have you read The Hobbit?", False),  # memory writes "the" in lower case too
        ("What is the capital of France?", False),
    ],
)
async def test_a_name_memory_writes_as_a_name_makes_a_question_relevant_under_every_floor(
    make_deps: Callable[..., Deps], question: str, named: bool
) -> None:
    deps = make_deps()
    deps.indexer.store_messages(USER, read_session(SESSION))
    deps.indexer.store_messages(
        USER,
        [
            NewMessage(
                external_id="anthony",
                role="user",
                content="I've got a funny story. Anthony and I went to a charity quiz night "
                "and lost the Harry Potter round to a super-nerd.",
                created_at="2026-03-19T10:00:00+00:00",
            )
        ],
    )
    await archive_user(deps, USER, archive_all=True)
    assert named_in_memory(deps, USER, [question]) is named
    candidates = topic_candidates(
        deps, ResponseContext(user_id=USER).tuned(**UNREACHABLE), [question]
    )
    assert bool(candidates) is named
    if named:  # and so with the everyday floors
        assert topic_candidates(deps, ResponseContext(user_id=USER), [question])
