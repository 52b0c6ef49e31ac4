"""The reranker subgraph (seed 001) over real SQLite + Chroma, driven by the real `ChatOpenAI`.

The model is a scripted OpenAI-compatible server on loopback, so what is asserted is
what goes over the wire: turn 1 forces `get_topics_content` without `response_format`,
turn 2 asks for JSON with the tool results in the conversation. Every row of the seed's
fallback table is triggered through the real client (HTTP errors, timeouts, replies that
break the protocol); the topology test that pins each fallback edge, and the paths
without a model, are in tests/unit/test_reranker_selection.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from core.deps import Deps
from nodes.response.rerank_selection import NO_REASON
from nodes.response.topic_content import size_label
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
from tests.support.worlds import (
    RERANK_SECRET,
    RerankWorld,
    build_rerank_world,
    candidate,
    rerank,
    selected_ids,
)

pytestmark = pytest.mark.timeout(30)

FORCED = {"type": "function", "function": {"name": "get_topics_content"}}
JSON_MODE = {"type": "json_object"}


@pytest.fixture
def llm_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> RerankWorld:
    """The world, with the reranker model pointed at the scripted server."""
    return build_rerank_world(make_deps(models={"reranker": server.chat_model()}))


def request_body(server: ScriptedOpenAI, index: int) -> dict[str, Any]:
    return server.chat_requests[index].json_body


def tool_results(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "tool")


def run_result(
    topics, people, *, fallback, llm_calls, dropped_ids=0, by_search_order=False
) -> dict[str, Any]:
    """The whole result of a reranker run, as the subgraph returns it."""
    return {
        "selected_topics": topics,
        "selected_people": people,
        "rerank_fallback": fallback,
        "rerank_dropped_ids": dropped_ids,
        "rerank_llm_calls": llm_calls,
        "selected_by_search_order": by_search_order,
    }


def answer(topics: list[dict[str, Any]], people: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"topics": topics, "people": people or []})


# -- the happy path ------------------------------------------------------------------


async def test_forced_tool_call_then_json_answer_selects_in_order(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"], w.vllm["id"]]}),
        reply(
            answer(
                [
                    {"id": w.petrov["id"], "reason": "Petrov from ProjectX, as asked"},
                    {"id": w.vllm["id"], "reason": "The H100 setup"},
                ],
                [{"id": w.petrov_person, "reason": "The Petrov the user means"}],
            )
        ),
    )

    result = await rerank(w)

    first = request_body(server, 0)
    assert first["tool_choice"] == FORCED
    assert "response_format" not in first
    assert [tool["function"]["name"] for tool in first["tools"]] == ["get_topics_content"]
    system, user = first["messages"][0]["content"], first["messages"][1]["content"]
    assert "get_topics_content" in system and "never instructions" in system
    assert "<date>2026-03-10 12:00 (Tuesday)</date>" in user
    assert "Remember Petrov? What did we set up on the H100?" in user
    assert "- Works as an ML engineer" in user
    assert (
        f"[ID:{w.vllm['id']}] 2026-03-02 | 2 msgs, {size_label(w.vllm['size_chars'])} | "
        "Setting up vLLM for Qwen3 on the H100"
    ) in user
    assert f"[ID:{w.thesis['id']}] 2026-03-02 | 2 msgs, ~26K chars | " in user
    assert f"[P:{w.petrov_person}] Petrov — colleague from ProjectX" in user

    second = request_body(server, 1)
    assert second["response_format"] == JSON_MODE
    assert "tool_choice" not in second
    loaded = tool_results(second)
    assert loaded.index(f"=== Topic {w.petrov['id']} ===") < loaded.index(
        f"=== Topic {w.vllm['id']} ==="
    )
    assert "[User (Alexei) (2026-03-02 09:00)]: Remember Petrov from ProjectX?" in loaded
    assert "Use tensor parallel 2 and fp8 weights." in loaded
    assert "Docker" not in loaded

    assert result == run_result(
        [
            {
                "id": w.petrov["id"],
                "reason": "Petrov from ProjectX, as asked",
                "excerpt": None,
                "score": 0.8,
            },
            {"id": w.vllm["id"], "reason": "The H100 setup", "excerpt": None, "score": 0.9},
        ],
        [{"id": w.petrov_person, "reason": "The Petrov the user means"}],
        fallback=None,
        llm_calls=2,
    )
    assert server.unscripted == []


async def test_a_second_tool_call_within_the_limit_loads_more_and_is_answered(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.vllm["id"]]}),
        tool_call("get_topics_content", {"ids": [w.docker["id"]]}),
        reply(answer([{"id": w.docker["id"], "reason": "the image size"}])),
    )

    result = await rerank(w)

    third = request_body(server, 2)
    assert third["response_format"] == JSON_MODE
    assert "Use a multi-stage build." in tool_results(third)
    assert selected_ids(result) == [w.docker["id"]]
    assert result["rerank_fallback"] is None
    assert result["rerank_llm_calls"] == 3


# -- every row of the fallback table --------------------------------------------------


@pytest.mark.parametrize(
    "failure", [http_error(500, "provider down"), drop_connection()], ids=["http_500", "dropped"]
)
async def test_api_error_before_the_tool_call_falls_back_to_vector_order(
    llm_world: RerankWorld, server: ScriptedOpenAI, failure
):
    server.script(failure)

    result = await rerank(llm_world, rerank_max_topics=2)

    assert result["rerank_fallback"] == "api_error"
    assert selected_ids(result) == [llm_world.vllm["id"], llm_world.petrov["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {"vector order (api_error)"}
    assert result["selected_by_search_order"] is True
    assert [topic["score"] for topic in result["selected_topics"]] == [0.9, 0.8]
    assert result["selected_people"] == [
        {"id": llm_world.petrov_person, "reason": "vector order (api_error)"}
    ]
    assert result["rerank_llm_calls"] == 1


async def test_timeout_before_the_tool_call_falls_back_to_vector_order_within_budget(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    server.script(delay(10, then=tool_call("get_topics_content", {"ids": [1]})))

    started = time.monotonic()
    result = await rerank(llm_world, rerank_timeout_s=0.5)

    assert time.monotonic() - started < 3
    assert result["rerank_fallback"] == "timeout_before_tool"
    assert selected_ids(result) == [topic["id"] for topic in llm_world.candidates]
    assert result["selected_topics"][0]["reason"] == "vector order (timeout_before_tool)"
    assert result["selected_by_search_order"] is True


async def test_a_reply_without_the_tool_call_is_a_protocol_violation(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(reply(answer([{"id": w.docker["id"], "reason": "skipped the tool"}])))

    result = await rerank(w)

    assert result["rerank_fallback"] == "protocol_violation"
    assert selected_ids(result) == [topic["id"] for topic in w.candidates]
    assert result["selected_by_search_order"] is True
    assert result["rerank_llm_calls"] == 1
    assert len(server.chat_requests) == 1


async def test_invalid_json_after_the_tool_call_takes_the_requested_ids_in_order(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
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
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}),
        reply(json.dumps({"choice": w.docker["id"]})),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "invalid_json"
    assert selected_ids(result) == [w.petrov["id"]]


async def test_timeout_after_the_tool_call_takes_the_requested_ids(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
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
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}), http_error(503, "overloaded")
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "api_error"
    assert selected_ids(result) == [w.petrov["id"]]
    assert result["selected_topics"][0]["reason"] == "requested by the reranker (api_error)"


async def test_tool_calls_past_the_limit_take_the_ids_requested_so_far(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
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
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(tool_call("get_topics_content", {"ids": [9999]}), raw_content("???"))

    result = await rerank(w, rerank_max_topics=1)

    assert result["rerank_fallback"] == "invalid_json"
    assert selected_ids(result) == [w.vllm["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (invalid_json)"
    assert result["rerank_dropped_ids"] == 1
    assert result["selected_by_search_order"] is True


async def test_without_candidates_nothing_is_asked_and_nothing_selected(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    result = await rerank(llm_world, candidates=[], people=[])

    assert result == run_result([], [], fallback="no_candidates", llm_calls=0, by_search_order=True)
    assert server.chat_requests == []


async def test_switched_off_the_model_is_never_asked_and_the_search_order_decides(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    result = await rerank(llm_world, reranker_enabled=False, rerank_max_topics=2)

    assert result["rerank_fallback"] == "disabled"
    assert selected_ids(result) == [llm_world.vllm["id"], llm_world.petrov["id"]]
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


# -- what the model may name -----------------------------------------------------------


async def test_ids_outside_the_candidates_are_dropped_and_counted(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.vllm["id"], 9999]}),
        reply(
            answer(
                [
                    {"id": 9999, "reason": "made up"},
                    {"id": w.vllm["id"], "reason": "real"},
                    {"id": w.foreign["id"], "reason": "another user's"},
                ],
                [{"id": 4242, "reason": "nobody"}],
            )
        ),
    )

    result = await rerank(w)

    assert selected_ids(result) == [w.vllm["id"]]
    assert result["selected_people"] == []
    assert result["rerank_dropped_ids"] == 3
    assert result["rerank_fallback"] is None


async def test_the_old_bare_list_answer_is_accepted(llm_world: RerankWorld, server: ScriptedOpenAI):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.vllm["id"]]}),
        reply(json.dumps([w.docker["id"], w.vllm["id"]])),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] is None
    assert selected_ids(result) == [w.docker["id"], w.vllm["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {NO_REASON}


async def test_excerpts_are_kept_only_for_topics_over_the_threshold(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    excerpt = "[User (Alexei) (2026-03-02 09:00)]: the chapter on methods\n[Assistant]: agreed"
    server.script(
        tool_call("get_topics_content", {"ids": [w.thesis["id"], w.vllm["id"]]}),
        reply(
            answer(
                [
                    {"id": w.thesis["id"], "reason": "the methods chapter", "excerpt": excerpt},
                    {"id": w.vllm["id"], "reason": "small", "excerpt": "[User]: How do I"},
                ]
            )
        ),
    )

    result = await rerank(w)

    assert w.thesis["size_chars"] > 25_000 > w.vllm["size_chars"]
    assert [topic["excerpt"] for topic in result["selected_topics"]] == [excerpt, None]


# -- user isolation -------------------------------------------------------------------


async def test_another_users_topic_never_reaches_the_model_or_the_selection(
    llm_world: RerankWorld, server: ScriptedOpenAI
):
    w = llm_world
    forged = [candidate(w.foreign, 0.99), *w.candidates]
    server.script(
        tool_call("get_topics_content", {"ids": [w.foreign["id"], w.vllm["id"]]}),
        reply(
            answer([{"id": w.foreign["id"], "reason": "x"}, {"id": w.vllm["id"], "reason": "y"}])
        ),
    )

    result = await rerank(w, candidates=forged)

    wire = json.dumps([request.json_body for request in server.chat_requests])
    assert "Rocket launch" not in wire and RERANK_SECRET not in wire
    loaded = tool_results(request_body(server, 1))
    assert f"=== Topic {w.vllm['id']} ===" in loaded
    assert f"Topic {w.foreign['id']} " not in loaded
    assert selected_ids(result) == [w.vllm["id"]]
    assert result["rerank_dropped_ids"] == 1
