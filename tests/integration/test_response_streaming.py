"""The answer while it is written: LangGraph's `messages` stream from the responder's model.

The responder is the real `ChatOpenAI` on the scripted server, which streams server-sent
events as the real API does (words `pace_s` apart, tool calls as argument fragments).
A turn with `on_text` sees the answer grow, in the tool loop and in the synthesis turn; a
stop ends the model's stream at once and keeps what was written as a partial answer; a
memory-only answer has no model and arrives whole. The answer's sources are recorded with
it: what the context held, the tools called, the fallbacks taken.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import pytest_asyncio

from app.turns import OnText, answer_turn, compile_response_graph, stream_turn
from app.views import answer_view, export_user
from core.context import ResponseContext
from core.deps import Deps
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call
from tests.support.worlds import USER, ResponseWorld, build_response_world

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"
ANSWER = (
    "You upgraded **Postgres 14 to 16** with `pg_dumpall` and a fresh volume; on staging "
    "the dump and restore took 14 minutes, so production got a 30 minute window."
)
QUESTION = "How long did the Postgres restore take on staging?"


@pytest_asyncio.fixture
async def llm_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> ResponseWorld:
    """The responder on the scripted server; enricher and reranker take their non-LLM paths."""
    return await build_response_world(make_deps(models={"responder": server.chat_model()}))


class Collected:
    """What `on_text` was called with."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)


async def ask(world: ResponseWorld, on_text: OnText | None, **options) -> dict:
    graph = compile_response_graph(world.deps)
    return await answer_turn(
        graph, world.deps, USER, QUESTION, now_iso=NOW, on_text=on_text, **options
    )


async def test_the_tool_loop_streams_the_answer_as_it_is_written(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(
        tool_call("search_history", {"query": "Postgres restore staging minutes"}, pace_s=0.01),
        reply(ANSWER, pace_s=0.01),
    )
    seen = Collected()

    result = await ask(llm_world, seen)

    assert result["answer"] == ANSWER
    assert len(seen.texts) >= 10
    assert all(len(a) < len(b) for a, b in zip(seen.texts, seen.texts[1:], strict=False))
    assert all(ANSWER.startswith(text) for text in seen.texts)
    assert seen.texts[-1] == ANSWER
    assert all(request.json_body["stream"] is True for request in server.chat_requests)
    tool_results = [m for m in server.chat_requests[1].json_body["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1, "the streamed tool call was reassembled and run"
    assert result["partial"] is False and result["answered_by"] == "responder"
    assert result["sources"]["tools"] == [
        {"name": "search_history", "args": {"query": "Postgres restore staging minutes"}}
    ]


async def test_the_synthesis_turn_streams_too(llm_world: ResponseWorld, server: ScriptedOpenAI):
    server.script(tool_call("search_history", {"query": "restore"}), reply(ANSWER, pace_s=0.01))
    deps = llm_world.deps
    (row,) = deps.indexer.store_messages(USER, new_messages([QUESTION], prefix="synthesis"))
    seen = Collected()

    state = await stream_turn(
        compile_response_graph(deps),
        {"text": QUESTION, "message_id": row["id"]},
        {},
        ResponseContext(user_id=USER, now_iso=NOW, max_tool_iterations=1),
        seen,
    )

    assert state["answered_by"] == "synthesis" and state["answer"] == ANSWER
    assert seen.texts[-1] == ANSWER and len(seen.texts) >= 10
    assert "tools" not in server.chat_requests[1].json_body, "the synthesis turn has no tools"


async def test_without_on_text_the_model_is_asked_for_the_whole_reply(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(reply(ANSWER))

    result = await ask(llm_world, None)

    assert result["answer"] == ANSWER
    assert not server.chat_requests[0].json_body.get("stream")
    assert server.streams == []


async def test_a_stop_ends_the_stream_at_once_and_keeps_what_was_written(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    long_answer = " ".join(f"word{index}" for index in range(200))
    server.script(reply(long_answer, pace_s=0.02))
    deps = llm_world.deps
    turn_id = "turn-stopped"

    with deps.stops.open(turn_id) as stop:

        def stop_after_five_words(text: str) -> None:
            if len(text.split()) >= 5:
                stop.set()

        result = await ask(llm_world, stop_after_five_words, external_id=turn_id)
    await asyncio.sleep(0.2)  # were the stream still read, more chunks would go out now

    [stream] = server.streams
    assert not stream.completed and stream.chunks_sent < stream.chunks_total / 2
    assert result["partial"] is True
    assert 5 <= len(result["answer"].split()) < 20
    assert long_answer.startswith(result["answer"])
    stored = deps.store.messages.all_of(USER)
    assert [m["content"] for m in stored if m["role"] == "assistant"][-1] == result["answer"]
    answer = answer_view(deps, USER, result["answer_id"])
    assert answer is not None and answer["partial"] is True


async def test_a_stop_before_the_first_word_stores_no_answer(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(reply(ANSWER))
    deps = llm_world.deps
    with deps.stops.open("turn-stopped-early") as stop:
        stop.set()
        result = await ask(llm_world, Collected(), external_id="turn-stopped-early")

    assert (result["answer"], result["partial"], result["answer_id"]) == ("", True, None)
    assert server.chat_requests == []
    assert deps.store.messages.all_of(USER)[-1]["content"] == QUESTION


async def test_a_memory_only_answer_arrives_whole_with_its_sources(make_deps):
    world = await build_response_world(make_deps())
    seen = Collected()

    result = await ask(world, seen)

    assert seen.texts == []
    assert result["answered_by"] == "memory" and result["answer"]
    sources = result["sources"]
    assert sources["fallbacks"] == {
        "enricher": "no_model",
        "reranker": "no_model",
        "responder": "no_model",
    }
    assert sources["topics"], "the recalled topics are the answer's sources"
    assert all(topic["id"] in world.user_topics for topic in sources["topics"])
    assert all(topic["reason"] == "vector order (no_model)" for topic in sources["topics"])
    assert sources["topics"][0]["summary"] and sources["topics"][0]["first_message_at"]
    assert [fact["id"] for fact in sources["facts"]] == [world.user_fact]
    assert sources["facts"][0]["core"] is True

    assert answer_view(world.deps, USER)["sources"] == sources, "/why: the newest answer"
    [exported] = export_user(world.deps, USER)["answers"]
    assert exported["message_id"] == f"reply-to-{world.deps.store.messages.all_of(USER)[-2]['id']}"
    assert [topic["id"] for topic in exported["context_used"]["topics"]] == [
        topic["id"] for topic in sources["topics"]
    ]


async def test_sources_leave_out_what_was_forgotten_since(make_deps):
    world = await build_response_world(make_deps())
    result = await ask(world, None)
    [first, *_] = result["sources"]["topics"]

    world.deps.store.topics.delete(USER, first["id"])
    world.deps.store.facts.delete(USER, world.user_fact)

    sources = answer_view(world.deps, USER, result["answer_id"])["sources"]
    assert first["id"] not in [topic["id"] for topic in sources["topics"]]
    assert sources["facts"] == []
    assert sources["forgotten"] == 2
