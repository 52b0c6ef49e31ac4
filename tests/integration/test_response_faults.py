"""Provider faults on the response path, through the real `ChatOpenAI` and the scripted
OpenAI-compatible server.

The enricher, the reranker and the responder meet HTTP 500, 429 with Retry-After, a
timeout, a dropped connection, empty replies, malformed JSON, hallucinated ids and
endless tool calls, each on the wire. Each turn still answers (the memory-only answer
where the responder failed), its fallback and reason are recorded, the user's message
and the answer are stored once, the archive is unchanged, and nothing of the other
user is read or touched; the user's message stays even when the turn fails. The memory
graph: test_memory_faults.py; through the bot: tests/e2e/test_bot_faults.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from app.turns import answer_turn, compile_response_graph, run_turn
from core.deps import Deps
from nodes.response.offline_answer import WORDING
from stores.embedders import Embedder
from tests.support.conversations import CAT_QUESTION
from tests.support.faults import ENOUGH, PROVIDER_FAULTS, chat_model, topic_snapshot
from tests.support.models import with_models
from tests.support.openai_server import (
    ScriptedOpenAI,
    Step,
    delay,
    drop_connection,
    empty_reply,
    http_error,
    raw_content,
    reply,
    tool_call,
)
from tests.support.services import local_deps
from tests.support.worlds import OTHER_SECRET, OTHER_USER, USER, FaultWorld, build_fault_world

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"


@pytest.fixture(scope="module")
def world_template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> FaultWorld:
    """The world built once; each test gets a copy of its data directory."""
    deps = local_deps(tmp_path_factory.mktemp("faults") / "data", embedder)
    try:
        return asyncio.run(build_fault_world(deps))
    finally:
        deps.close()


@pytest.fixture
def world(world_template: FaultWorld, embedder: Embedder, tmp_path: Path) -> Iterator[FaultWorld]:
    """A copy of the world's data directory for each test. These tests are about model
    failures, and a copied SQLite file is their fixture, so they run on SQLite only (the
    PostgreSQL store's turns are covered by the other response tests)."""
    copy = tmp_path / "world"
    shutil.copytree(world_template.deps.settings.data_dir, copy)
    deps = local_deps(copy, embedder)
    yield dataclasses.replace(world_template, deps=deps)
    deps.close()


async def turn_with_state(
    deps: Deps, text: str, external_id: str = "q-1"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`answer_turn` (the body of `run_turn`) and the final state of its graph run."""
    saver = InMemorySaver()
    graph = compile_response_graph(deps, saver)
    result = await answer_turn(graph, deps, USER, text, now_iso=NOW, external_id=external_id)
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    (thread_id,) = threads
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    return result, snapshot.values


def assert_turn_stored(world: FaultWorld, text: str, answer: str, external_id: str = "q-1") -> None:
    """The history untouched, then the turn's question and its stored answer; the archive
    unchanged and nothing of the other user touched."""
    stored = world.deps.store.messages.all_of(USER)
    history = len(world.history)
    assert [(m["external_id"], m["content"]) for m in stored[:history]] == [
        (m["external_id"], m["content"]) for m in world.history
    ]
    question, *answers = stored[history:]
    assert (question["external_id"], question["role"], question["content"]) == (
        external_id,
        "user",
        text,
    )
    assert [(m["external_id"], m["role"], m["content"]) for m in answers] == [
        (f"reply-to-{question['id']}", "assistant", answer)
    ]
    assert topic_snapshot(world.deps, USER) == world.topics
    assert world.deps.store.facts.get(OTHER_USER, world.other_fact["id"]) == world.other_fact


def assert_memory_only_answer(state: dict[str, Any], result: dict[str, Any]) -> None:
    assert state["answered_by"] == "memory"
    assert result["answer"].startswith(WORDING["en"].intro)
    assert "renal diet" in result["answer"]
    assert OTHER_SECRET not in result["answer"]


ENRICHER_FAULTS = {
    **{name: (fault.step, fault.reason) for name, fault in PROVIDER_FAULTS.items()},
    "empty_reply": (empty_reply(), "empty_reply"),
}


@pytest.mark.parametrize(("step", "expected"), ENRICHER_FAULTS.values(), ids=ENRICHER_FAULTS.keys())
async def test_a_failing_enricher_searches_with_the_raw_text(
    world: FaultWorld, server: ScriptedOpenAI, step: Step, expected: str
):
    deps = with_models(world.deps, enricher=chat_model(server, steps=[step]))
    server.script(*[step] * ENOUGH)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == 1
    assert (state["enrich_fallback"], state["query"]) == (expected, CAT_QUESTION)
    assert [topic["id"] for topic in result["topics"]][:1] == [world.cat_topic]
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


def hallucinated(world: FaultWorld, ghost: int) -> list[Step]:
    return [
        tool_call("get_topics_content", {"ids": [ghost, world.other_topic]}),
        reply(json.dumps({"topics": [{"id": ghost}, {"id": world.other_topic}]})),
    ]


def reranker_faults(world: FaultWorld) -> dict[str, tuple[list[Step], str | None, int]]:
    """name → (the provider's replies, the expected fallback, requests made)."""
    load_cat = tool_call("get_topics_content", {"ids": [world.cat_topic]})
    return {
        **{
            name: ([fault.step], "timeout_before_tool" if name == "timeout" else "api_error", 1)
            for name, fault in PROVIDER_FAULTS.items()
        },
        "empty_reply": ([empty_reply()], "protocol_violation", 1),
        "malformed_json": ([load_cat, raw_content("The cat one, obviously.")], "invalid_json", 2),
        "empty_json": ([load_cat, empty_reply()], "invalid_json", 2),
        "endless_tool_calls": ([load_cat] * ENOUGH, "tool_call_limit", 4),
        "hallucinated_ids": (hallucinated(world, 10**7), None, 2),
        # Past SQLite's 64-bit integers: an unknown id like any other, not OverflowError.
        "hallucinated_ids_over_64_bits": (hallucinated(world, 2**64), None, 2),
    }


RERANKER_CASES = [
    "http_500",
    "http_429",
    "timeout",
    "dropped_connection",
    "empty_reply",
    "malformed_json",
    "empty_json",
    "endless_tool_calls",
    "hallucinated_ids",
    "hallucinated_ids_over_64_bits",
]


@pytest.mark.parametrize("case", RERANKER_CASES)
async def test_a_failing_reranker_falls_back_and_the_turn_is_answered(
    world: FaultWorld, server: ScriptedOpenAI, case: str
):
    steps, expected, requests = reranker_faults(world)[case]
    deps = with_models(world.deps, reranker=chat_model(server, steps=steps))
    server.script(*steps)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == requests
    assert result["fallback"] == expected
    selected = [topic["id"] for topic in result["topics"]]
    assert set(selected) <= set(world.topics)
    if expected is None:  # the model's own choice, every id of it unknown: nothing selected
        assert selected == [] and state["rerank_dropped_ids"] == 2
        assert OTHER_SECRET not in result["answer"]
    else:
        assert selected[0] == world.cat_topic
        assert_memory_only_answer(state, result)
    wire = json.dumps([request.json_body for request in server.chat_requests])
    assert OTHER_SECRET not in wire
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


def endless_search() -> Step:
    return tool_call("search_history", {"query": "Marzipan kidneys"})


RESPONDER_FAULTS = {
    **{name: ([fault.step], fault.reason, 1) for name, fault in PROVIDER_FAULTS.items()},
    "empty_twice": ([empty_reply(), empty_reply()], "empty_reply", 2),
    # Five tool rounds (max_tool_iterations), then the synthesis turn, which has no tools
    # and gets a tool call again: empty twice, so the memory-only answer.
    "endless_tool_calls": ([endless_search()] * ENOUGH, "empty_reply", 7),
}


@pytest.mark.parametrize(
    ("steps", "expected", "requests"), RESPONDER_FAULTS.values(), ids=RESPONDER_FAULTS.keys()
)
async def test_a_failing_responder_gives_the_memory_only_answer(
    world: FaultWorld, server: ScriptedOpenAI, steps: list[Step], expected: str, requests: int
):
    deps = with_models(world.deps, responder=chat_model(server, steps=steps))
    server.script(*steps)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == requests
    assert state["respond_fallback"] == expected
    if expected in ("api_error", "timeout"):
        assert state["respond_error"].split(":")[0] in {
            fault.error for fault in PROVIDER_FAULTS.values()
        }
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


@pytest.mark.parametrize("ghost", [10**7, 2**63, 10**23], ids=["unknown", "2**63", "10**23"])
async def test_hallucinated_ids_and_bad_arguments_in_the_responders_tool_calls_are_refused(
    world: FaultWorld, server: ScriptedOpenAI, ghost: int
):
    """Each refusal comes back to the model as a tool result it can read; the turn goes on.
    An id past SQLite's 64-bit integers is just another unknown id."""
    deps = with_models(world.deps, responder=chat_model(server))
    server.script(
        tool_call("get_topics_content", {"ids": [ghost, world.other_topic]}),
        tool_call("manage_memory", {"action": "delete", "fact_id": ghost}),
        tool_call(
            "manage_memory",
            {"action": "update", "fact_id": world.other_fact["id"], "content": "Hijacked"},
        ),
        tool_call("manage_memory", {"action": "explode", "fact_id": "not a number"}),
        reply("I could not find or change any of that."),
    )

    result, state = await turn_with_state(deps, CAT_QUESTION)

    results = [
        m["content"] for m in server.chat_requests[-1].json_body["messages"] if m["role"] == "tool"
    ]
    assert len(results) == 4 and state["tool_rounds"] == 4
    assert results[0] == "No content is available for the requested topic IDs."
    assert all("manage_memory refused" in text for text in results[1:3])
    assert "action" in results[3] and "fact_id" in results[3]
    assert OTHER_SECRET not in json.dumps([r.json_body for r in server.chat_requests])
    assert (state["answered_by"], result["answer"]) == (
        "responder",
        "I could not find or change any of that.",
    )
    assert world.deps.store.facts.all_of(USER) == []
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_a_rate_limited_responder_is_retried_after_retry_after(
    world: FaultWorld, server: ScriptedOpenAI
):
    deps = with_models(world.deps, responder=chat_model(server, max_retries=1))
    server.script(http_error(429, "slow down", retry_after=0.3), reply("Renal diet, he said."))
    started = asyncio.get_running_loop().time()

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert asyncio.get_running_loop().time() - started >= 0.3
    assert len(server.chat_requests) == 2
    assert (state["answered_by"], result["answer"]) == ("responder", "Renal diet, he said.")
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_every_agent_failing_at_once_still_answers_from_memory(
    world: FaultWorld, server: ScriptedOpenAI
):
    steps = [http_error(500), drop_connection(), delay(5.0)]
    model = chat_model(server, steps=steps)
    deps = with_models(world.deps, enricher=model, reranker=model, responder=model)
    server.script(*steps)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert (state["enrich_fallback"], result["fallback"], state["respond_fallback"]) == (
        "api_error",
        "api_error",
        "timeout",
    )
    assert result["llm_calls"] == 3
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_a_turn_that_fails_keeps_the_users_message(
    world: FaultWorld, monkeypatch: pytest.MonkeyPatch
):
    """The database fails the search after the message is stored: the turn fails with a
    clear error (after the search node's retries), the message stays, no answer is stored,
    and the next turn, once it is back, answers. (A vector store that is down no longer
    fails a turn: `tests/e2e/test_chroma_down_turn.py`.)"""
    working_search = world.deps.store.topics.search

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(world.deps.store.topics, "search", unavailable)
    with pytest.raises(sqlite3.OperationalError):
        await run_turn(world.deps, USER, CAT_QUESTION, now_iso=NOW, external_id="q-1")
    stored = world.deps.store.messages.all_of(USER)
    assert [(m["external_id"], m["content"]) for m in stored[len(world.history) :]] == [
        ("q-1", CAT_QUESTION)
    ]

    monkeypatch.setattr(world.deps.store.topics, "search", working_search)
    again = await run_turn(world.deps, USER, CAT_QUESTION, now_iso=NOW, external_id="q-1")
    assert "renal diet" in again["answer"]
    assert_turn_stored(world, CAT_QUESTION, again["answer"])
