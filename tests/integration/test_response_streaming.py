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
import random
import time

import pytest
from langchain_core.messages import HumanMessage

from app.deadline import Progress
from app.turns import OnText, answer_turn, compile_response_graph, turn_states
from app.views import answer_view, export_user
from core.context import ResponseContext
from nodes.shared.agent import stream_reply
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

    states = turn_states(
        compile_response_graph(deps),
        {"text": QUESTION, "message_id": row["id"]},
        {},
        ResponseContext(user_id=USER, now_iso=NOW, max_tool_iterations=1),
        seen,
    )
    state = await Progress().follow(states)

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


@pytest.mark.timeout(180)
async def test_a_stop_at_any_moment_of_a_fast_stream_ends_its_reading(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    """A token every 5-10 ms, and a stop at a random moment from the request's arrival on
    (while the client still sets the stream up, or reads it): every time the stream is
    hung up on, not read to its end, and the answer stored is the partial one the turn
    returned, holding all that was shown."""
    deps, turns = llm_world.deps, 20
    long_answer = " ".join(f"word{index}" for index in range(600))
    pressed: list[float] = []
    for turn in range(turns):
        server.script(reply(long_answer, pace_s=random.uniform(0.005, 0.01)))
        requests, turn_id, seen = len(server.chat_requests), f"turn-fast-{turn}", Collected()
        with deps.stops.open(turn_id) as stop:

            async def press(stop: asyncio.Event = stop, requests: int = requests) -> None:
                for _ in range(10_000):  # the request arrives (within 10 s)
                    if len(server.chat_requests) > requests:
                        break
                    await asyncio.sleep(0.001)
                await asyncio.sleep(random.uniform(0.0, 0.05))
                pressed.append(time.monotonic())
                stop.set()

            pressing = asyncio.create_task(press())
            result = await ask(llm_world, seen, external_id=turn_id)
            await pressing
        ended_in = time.monotonic() - pressed[-1]
        stream = server.streams[-1]
        sent = stream.chunks_sent
        await asyncio.sleep(0.1)  # a stream still read would send more chunks by now

        assert not stream.completed and stream.chunks_sent == sent, f"turn {turn} read on"
        assert ended_in < 2.0, f"turn {turn} ended {ended_in:.2f} s after the stop"
        assert result["partial"] is True
        assert long_answer.startswith(result["answer"])
        shown = [text.rstrip() for text in seen.texts]  # the answer is kept stripped
        assert all(result["answer"].startswith(text) for text in shown), "all shown is kept"
        if result["answer_id"]:
            assert answer_view(deps, USER, result["answer_id"])["partial"] is True
            [stored] = deps.store.messages.by_ids(USER, [result["answer_id"]])
            assert stored["content"] == result["answer"]


@pytest.mark.timeout(120)
async def test_a_stop_while_the_stream_is_set_up_ends_its_reading(server: ScriptedOpenAI):
    """`stream_reply` alone, stopped 0-60 ms after it starts (connecting, sending the
    request, or reading the first tokens), 40 times: the reader never reads on past
    the stop, whichever step of the client's the cancellation meets."""
    model, long_answer = server.chat_model(timeout=30), " ".join(f"w{i}" for i in range(600))
    for attempt in range(40):
        server.script(reply(long_answer, pace_s=random.uniform(0.005, 0.01)))
        streams, stop = len(server.streams), asyncio.Event()
        asyncio.get_running_loop().call_later(random.uniform(0.0, 0.06), stop.set)
        started = time.monotonic()

        message, cut = await stream_reply(model, [HumanMessage(QUESTION)], stop)

        await asyncio.sleep(0.05)  # a stream still read would send more chunks by now
        assert cut and time.monotonic() - started < 1.5, f"attempt {attempt} read on"
        assert long_answer.startswith(message.text)
        assert all(not stream.completed for stream in server.streams[streams:])
