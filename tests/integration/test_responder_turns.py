"""Whole turns of the response graph with the responder on the real `ChatOpenAI` against
the scripted OpenAI-compatible server, over real SQLite + Chroma: the context's layers,
the tool loop's limit, empty replies and API errors, and the tools kept to the run's user.
The nodes alone and the non-LLM path: tests/integration/test_response_graph.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from core.context import ResponseContext
from core.deps import Deps
from core.state import ResponseState
from graphs.response import build_response_graph
from nodes.response.offline_answer import WORDING
from prompts import responder as responder_prompt
from tests.support.models import recording_model
from tests.support.openai_server import ScriptedOpenAI, empty_reply, http_error, reply, tool_call
from tests.support.worlds import (
    OTHER_USER,
    RESPONSE_SECRET,
    USER,
    ResponseWorld,
    run_response_turn,
)

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"


async def run_graph(world: ResponseWorld, text: str, **context: Any) -> ResponseState:
    """Store `text` as user 1's message and run one turn on it, at `NOW`."""
    return await run_response_turn(world, text, NOW, **context)


# -- the responder through the real ChatOpenAI --------------------------------------------


def request(server: ScriptedOpenAI, index: int) -> dict[str, Any]:
    return server.chat_requests[index].json_body


async def test_a_plain_answer_is_stored_and_the_context_has_its_layers(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(reply("Dump and restore took 14 minutes on staging."))
    state = await run_graph(llm_world, "How long did the Postgres restore take on staging?")
    assert state["answered_by"] == "responder"
    assert state["answer"] == "Dump and restore took 14 minutes on staging."
    body = request(server, 0)
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        "search_history",
        "manage_memory",
        "get_topics_content",
        "schedule_task",
    ]
    system = body["messages"][0]["content"]
    assert "<date>2026-03-20 10:00 (Friday)</date>" in system
    assert f"- [{llm_world.user_fact}] Lives in Berlin with Ira" in system
    assert "<recalled_topics>" in system and "dump and restore took 14 minutes" in system
    assert RESPONSE_SECRET not in system
    assert body["messages"][-1] == {
        "role": "user",
        "content": "How long did the Postgres restore take on staging?",
    }
    assert list(state["context_layers"]) == ["system", "topics", "current"]  # all archived
    assert state["context_tokens"] >= sum(state["context_layers"].values())
    assert llm_world.deps.store.messages.all_of(USER)[-1]["content"] == state["answer"]


async def test_when_no_model_reranks_the_context_fills_past_the_selection(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    """The responder answers, the reranker has no model: its selection is the search order
    cut at its limit, so the room the selection leaves goes to the next candidates (what
    `topica eval locomo` measures)."""
    server.script(reply("Fourteen minutes."))
    state = await run_graph(
        llm_world, "How long did the Postgres restore take on staging?", rerank_max_topics=1
    )
    assert (state["rerank_fallback"], state["selected_by_search_order"]) == ("no_model", True)
    assert len(state["selected_topics"]) == 1
    candidates = [candidate["id"] for candidate in state["found"]["topics"]]
    assert len(candidates) > 1
    # Room for every candidate whole (8,000 tokens): all of them, in search order.
    used = state["context_used"]["topics"]
    assert [topic["id"] for topic in used] == candidates
    assert {topic["reason"] for topic in used[1:]} == {"vector order (no_model)"}
    system = request(server, 0)["messages"][0]["content"]
    for topic_id in candidates:
        assert f"=== Topic {topic_id} ===" in system
    assert RESPONSE_SECRET not in system
    assert not llm_world.other_topics & set(candidates)


async def test_tool_loop_stops_at_the_limit_and_synthesises_without_tools(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(
        tool_call("search_history", {"query": "Postgres upgrade"}),
        tool_call("search_history", {"query": "pg_dumpall"}),
        reply("It took 14 minutes."),
    )
    state = await run_graph(
        llm_world, "Remind me about the Postgres upgrade", max_tool_iterations=2
    )
    assert len(server.chat_requests) == 3
    assert "tools" in request(server, 0) and "tools" in request(server, 1)
    synthesis = request(server, 2)
    assert "tools" not in synthesis and "tool_choice" not in synthesis
    assert "tool budget for this turn is spent" in synthesis["messages"][-1]["content"]
    tool_results = [m["content"] for m in synthesis["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 2 and "dump and restore took 14 minutes" in tool_results[0]
    assert RESPONSE_SECRET not in "".join(tool_results)
    assert state["answered_by"] == "synthesis"
    assert state["tool_rounds"] == 2
    assert state["answer"] == "It took 14 minutes."
    assert not server.unscripted


async def test_an_empty_reply_is_retried_once(llm_world: ResponseWorld, server: ScriptedOpenAI):
    server.script(empty_reply(), reply("Here it is."))
    state = await run_graph(llm_world, "Anything about Postgres?")
    assert len(server.chat_requests) == 2
    assert request(server, 0)["messages"] == request(server, 1)["messages"]
    assert (state["answer"], state["answered_by"], state["empty_replies"]) == (
        "Here it is.",
        "responder",
        1,
    )


async def test_a_second_empty_reply_gives_the_memory_only_answer(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(empty_reply(), reply("</s>"))
    state = await run_graph(llm_world, "Anything about Postgres?")
    assert len(server.chat_requests) == 2
    assert state["respond_fallback"] == "empty_reply"
    assert state["answered_by"] == "memory"
    assert state["answer"].startswith(WORDING["en"].intro)
    assert "dump and restore took 14 minutes" in state["answer"]


async def test_an_api_error_gives_the_memory_only_answer(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(http_error(500, "provider down"))
    state = await run_graph(llm_world, "Что сказал ветеринар про Марципана?")
    assert state["respond_fallback"] == "api_error"
    assert "Error code: 500 - provider down" in state["respond_error"]
    assert state["answer"].startswith(WORDING["ru"].intro)
    assert "хроническая болезнь почек" in state["answer"]
    assert llm_world.deps.store.messages.all_of(USER)[-1]["content"] == state["answer"]


async def test_manage_memory_refuses_another_users_fact(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(
        tool_call("manage_memory", {"action": "delete", "fact_id": llm_world.other_fact}),
        reply("I could not delete that."),
    )
    await run_graph(llm_world, "Forget the secret project")
    (tool_result,) = [m for m in request(server, 1)["messages"] if m["role"] == "tool"]
    assert "manage_memory refused" in tool_result["content"]
    assert f"fact {llm_world.other_fact} not found" in tool_result["content"]
    assert llm_world.deps.store.facts.get(OTHER_USER, llm_world.other_fact)
    assert [f["id"] for f in llm_world.deps.store.facts.all_of(USER)] == [llm_world.user_fact]


async def test_manage_memory_adds_for_the_run_user_whatever_the_arguments_say(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    server.script(
        tool_call(
            "manage_memory",
            {
                "action": "add",
                "content": "Has a cat named Marzipan",
                "fact_type": "context",
                "importance": 70,
                "user_id": OTHER_USER,
            },
        ),
        tool_call(
            "manage_memory",
            {"action": "update", "fact_id": llm_world.user_fact, "importance": 100},
        ),
        reply("Noted."),
    )
    await run_graph(llm_world, "Remember that my cat is Marzipan")
    store = llm_world.deps.store
    facts = {f["content"]: f for f in store.facts.all_of(USER)}
    assert facts["Has a cat named Marzipan"]["importance"] == 70
    assert facts["Lives in Berlin with Ira"]["importance"] == 100
    assert [f["content"] for f in store.facts.all_of(OTHER_USER)] == ["Has a secret project"]
    assert llm_world.deps.vectors.count("facts", USER) == 2


async def test_get_topics_content_reads_only_the_run_users_topics(
    llm_world: ResponseWorld, server: ScriptedOpenAI
):
    other_topic = next(iter(llm_world.other_topics))
    server.script(
        tool_call("get_topics_content", {"ids": [other_topic]}),
        reply("Nothing there."),
    )
    await run_graph(llm_world, "Show me topic content")
    (tool_result,) = [m for m in request(server, 1)["messages"] if m["role"] == "tool"]
    assert RESPONSE_SECRET not in tool_result["content"]
    assert "No content is available" in tool_result["content"]


async def test_the_responder_binds_the_four_tools(make_deps: Callable[..., Deps]):
    model = recording_model(AIMessage("Hello there."))
    deps = make_deps(models={"responder": model})
    graph = build_response_graph(deps).compile()
    state = await graph.ainvoke(
        {"text": "Hello"}, context=ResponseContext(user_id=USER, now_iso=NOW)
    )
    assert model.bound_tools == [
        ["search_history", "manage_memory", "get_topics_content", "schedule_task"]
    ]
    assert state["answer"] == "Hello there."
    assert isinstance(model.prompts[0][-1], HumanMessage)
    assert not any(isinstance(m, ToolMessage) for m in model.prompts[0])
    assert responder_prompt.NO_PROFILE in model.prompts[0][0].text
