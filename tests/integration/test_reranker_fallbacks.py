"""The reranker subgraph's fallback table (seed 001), every row triggered through the real
`ChatOpenAI` against the scripted OpenAI-compatible server on loopback, over real SQLite +
Chroma: HTTP errors, timeouts and replies that break the protocol, before and after the
tool call. The happy path and what the model may name: tests/integration/test_reranker_graph.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from core.deps import Deps
from nodes.shared.agent import LEDGER
from tests.support.openai_server import (
    ScriptedOpenAI,
    delay,
    drop_connection,
    http_error,
    raw_content,
    reply,
    tool_call,
)
from tests.support.rerank_wire import (
    answer,
    request_body,
    run_result,
)
from tests.support.worlds import (
    RerankWorld,
    build_rerank_world,
    rerank,
    selected_ids,
)

pytestmark = pytest.mark.timeout(30)


# -- every row of the fallback table --------------------------------------------------


@pytest.mark.parametrize(
    "failure", [http_error(500, "provider down"), drop_connection()], ids=["http_500", "dropped"]
)
async def test_api_error_before_the_tool_call_falls_back_to_vector_order(
    rerank_world: RerankWorld, server: ScriptedOpenAI, failure
):
    server.script(failure)

    result = await rerank(rerank_world, rerank_max_topics=2)

    assert result["rerank_fallback"] == "api_error"
    assert selected_ids(result) == [rerank_world.vllm["id"], rerank_world.petrov["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {"vector order (api_error)"}
    assert result["selected_by_search_order"] is True
    assert [topic["score"] for topic in result["selected_topics"]] == [0.9, 0.8]
    assert result["selected_people"] == [
        {"id": rerank_world.petrov_person, "reason": "vector order (api_error)"}
    ]
    assert result["rerank_llm_calls"] == 1


async def test_timeout_before_the_tool_call_falls_back_to_vector_order_within_budget(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    server.script(delay(10, then=tool_call("get_topics_content", {"ids": [1]})))

    started = time.monotonic()
    result = await rerank(rerank_world, rerank_timeout_s=0.5)

    assert time.monotonic() - started < 3
    assert result["rerank_fallback"] == "timeout_before_tool"
    assert selected_ids(result) == [topic["id"] for topic in rerank_world.candidates]
    assert result["selected_topics"][0]["reason"] == "vector order (timeout_before_tool)"
    assert result["selected_by_search_order"] is True


async def test_a_reply_without_the_tool_call_is_a_protocol_violation(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(reply(answer([{"id": w.docker["id"], "reason": "skipped the tool"}])))

    result = await rerank(w)

    assert result["rerank_fallback"] == "protocol_violation"
    assert selected_ids(result) == [topic["id"] for topic in w.candidates]
    assert result["selected_by_search_order"] is True
    assert result["rerank_llm_calls"] == 1
    assert len(server.chat_requests) == 1


async def test_invalid_json_after_the_tool_call_takes_the_requested_ids_in_order(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.vllm["id"]]}),
        raw_content("Sorry, I cannot decide."),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "invalid_json"
    assert selected_ids(result) == [w.docker["id"], w.vllm["id"]]
    assert result["selected_by_search_order"] is False  # the model's requests decided
    assert result["selected_topics"][0] == {
        "id": w.docker["id"],
        "reason": "requested by the reranker (invalid_json)",
        "excerpt": None,
        "score": 0.7,
    }
    assert result["rerank_llm_calls"] == 2


async def test_json_of_the_wrong_shape_is_invalid_json(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}),
        reply(json.dumps({"choice": w.docker["id"]})),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "invalid_json"
    assert selected_ids(result) == [w.petrov["id"]]


async def test_timeout_after_the_tool_call_takes_the_requested_ids(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.thesis["id"], w.petrov["id"]]}),
        delay(10, then=reply(answer([]))),
    )

    started = time.monotonic()
    result = await rerank(w, rerank_timeout_s=1.0)

    assert time.monotonic() - started < 3.5
    assert result["rerank_fallback"] == "timeout_after_tool"
    assert selected_ids(result) == [w.thesis["id"], w.petrov["id"]]
    assert (
        result["selected_topics"][1]["reason"] == "requested by the reranker (timeout_after_tool)"
    )


async def test_api_error_after_the_tool_call_takes_the_requested_ids(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}), http_error(503, "overloaded")
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "api_error"
    assert selected_ids(result) == [w.petrov["id"]]
    assert result["selected_topics"][0]["reason"] == "requested by the reranker (api_error)"


async def test_tool_calls_past_the_limit_take_the_ids_requested_so_far(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}),
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.petrov["id"]]}),
        tool_call("get_topics_content", {"ids": [w.vllm["id"]]}),
        tool_call("get_topics_content", {"ids": [w.thesis["id"]]}),
    )

    result = await rerank(w, rerank_max_tool_calls=3)

    assert result["rerank_fallback"] == "tool_call_limit"
    assert selected_ids(result) == [w.petrov["id"], w.docker["id"], w.vllm["id"]]
    assert result["rerank_llm_calls"] == 4
    assert len(server.chat_requests) == 4
    assert server.unscripted == []


async def test_requested_ids_none_of_which_are_candidates_fall_back_to_vector_order(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(tool_call("get_topics_content", {"ids": [9999]}), raw_content("???"))

    result = await rerank(w, rerank_max_topics=1)

    assert result["rerank_fallback"] == "invalid_json"
    assert selected_ids(result) == [w.vllm["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (invalid_json)"
    assert result["rerank_dropped_ids"] == 1
    assert result["selected_by_search_order"] is True


async def test_without_candidates_nothing_is_asked_and_nothing_selected(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    result = await rerank(rerank_world, candidates=[], people=[])

    assert result == run_result([], [], fallback="no_candidates", llm_calls=0, by_search_order=True)
    assert server.chat_requests == []


async def test_switched_off_the_model_is_never_asked_and_the_search_order_decides(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    result = await rerank(rerank_world, reranker_enabled=False, rerank_max_topics=2)

    assert result["rerank_fallback"] == "disabled"
    assert selected_ids(result) == [rerank_world.vllm["id"], rerank_world.petrov["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (disabled)"
    assert result["selected_by_search_order"] is True
    assert result["rerank_llm_calls"] == 0
    assert server.chat_requests == []


@pytest.mark.parametrize(
    ("capabilities", "asked"),
    [
        ({"llm_named_tool_choice": False}, True),
        ({"llm_named_tool_choice": False, "llm_required_tool_choice": False}, False),
        ({"llm_tool_calls": False}, False),
    ],
)
async def test_without_a_forcing_tool_choice_the_search_order_decides_at_once(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, capabilities, asked
):
    LEDGER.clear()
    world = build_rerank_world(make_deps(models={"reranker": server.chat_model()}, **capabilities))
    server.script(
        tool_call("get_topics_content", {"topic_ids": [world.vllm["id"]]}),
        reply(answer([{"id": world.vllm["id"], "reason": "asked"}])),
    )
    started = time.monotonic()

    result = await rerank(world)

    assert time.monotonic() - started < 2
    if asked:
        assert request_body(server, 0)["tool_choice"] == "required"
        assert result["rerank_fallback"] is None
        assert [call.outcome for call in LEDGER.calls()] == ["accepted", "accepted"]
    else:
        assert server.chat_requests == []
        assert result["rerank_fallback"] == "unforced_call"
        assert result["selected_by_search_order"] is True
        assert [(c.agent, c.outcome) for c in LEDGER.calls()] == [("reranker", "unforced_call")]
