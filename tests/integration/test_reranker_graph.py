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

import pytest

from nodes.response.rerank_selection import NO_REASON
from nodes.response.topic_content import size_label
from tests.support.openai_server import (
    ScriptedOpenAI,
    reply,
    tool_call,
)
from tests.support.rerank_wire import (
    FORCED,
    JSON_MODE,
    answer,
    request_body,
    run_result,
    tool_results,
)
from tests.support.worlds import (
    RERANK_SECRET,
    RerankWorld,
    candidate,
    rerank,
    selected_ids,
)

pytestmark = pytest.mark.timeout(30)


# -- the happy path ------------------------------------------------------------------


async def test_forced_tool_call_then_json_answer_selects_in_order(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
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
    assert "[User (Alexei) (09:00)]: Remember Petrov from ProjectX?" in loaded
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
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
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


# -- what the model may name -----------------------------------------------------------


async def test_ids_outside_the_candidates_are_dropped_and_counted(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
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


async def test_the_old_bare_list_answer_is_accepted(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.vllm["id"]]}),
        reply(json.dumps([w.docker["id"], w.vllm["id"]])),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] is None
    assert selected_ids(result) == [w.docker["id"], w.vllm["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {NO_REASON}


async def test_excerpts_are_kept_only_for_topics_over_the_threshold(
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
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
    rerank_world: RerankWorld, server: ScriptedOpenAI
):
    w = rerank_world
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
