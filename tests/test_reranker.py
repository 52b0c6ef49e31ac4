"""The reranker subgraph (seed 001) over real SQLite + Chroma, driven by the real `ChatOpenAI`.

The model is a scripted OpenAI-compatible server on loopback, so what is asserted is
what goes over the wire: turn 1 forces `get_topics_content` without `response_format`,
turn 2 asks for JSON with the tool results in the conversation. Every row of the seed's
fallback table is triggered through the real client (HTTP errors, timeouts, replies that
break the protocol), and the topology test pins each fallback edge.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage, TopicRow
from core.state import PersonCandidate, TopicCandidate
from graphs.reranker import build_reranker_graph
from nodes.response.rerank_selection import (
    NO_REASON,
    parse_answer,
    requested_selection,
    requested_topic_ids,
    select_answer,
    vector_selection,
)
from nodes.response.topic_content import (
    NOTHING_FOUND,
    make_get_topics_content_tool,
    render_topics_content,
    size_label,
)
from nodes.shared.structured import LLMOutputError
from tests.support.openai_server import (
    ScriptedOpenAI,
    delay,
    drop_connection,
    http_error,
    raw_content,
    reply,
    tool_call,
)

pytestmark = pytest.mark.timeout(30)

USER, OTHER_USER = 1, 2
NOW = "2026-03-10T12:00:00+00:00"
FORCED = {"type": "function", "function": {"name": "get_topics_content"}}
JSON_MODE = {"type": "json_object"}
SECRET = "the launch code is 7741"
LARGE_MESSAGE_CHARS = 13_000
SCORES = (0.9, 0.8, 0.7, 0.6)


@dataclass
class World:
    """User 1's topics (three small, one over the excerpt threshold) and a person; user 2's
    topic holds a secret that must never reach user 1's reranker."""

    deps: Deps
    vllm: TopicRow
    petrov: TopicRow
    docker: TopicRow
    thesis: TopicRow
    foreign: TopicRow
    petrov_person: int

    @property
    def candidates(self) -> list[TopicCandidate]:
        """User 1's candidates as search hands them over: best fused score first."""
        ordered = (self.vllm, self.petrov, self.docker, self.thesis)
        return [candidate(topic, score) for topic, score in zip(ordered, SCORES, strict=True)]

    @property
    def people(self) -> list[PersonCandidate]:
        return [
            PersonCandidate(
                id=self.petrov_person,
                name="Petrov",
                description="colleague from ProjectX",
                score=0.7,
            )
        ]


def candidate(topic: TopicRow, score: float) -> TopicCandidate:
    return TopicCandidate(
        id=topic["id"],
        summary=topic["summary"],
        date=topic["first_message_at"][:10],
        message_count=topic["message_count"],
        size_chars=topic["size_chars"],
        score=score,
        vector_score=score,
    )


def save_topic(
    deps: Deps,
    user_id: int,
    summary: str,
    contents: list[str],
    prefix: str,
    make_messages: Callable[..., list[NewMessage]],
) -> TopicRow:
    rows = deps.store.messages.add(user_id, make_messages(contents, prefix=prefix))
    (topic,) = deps.store.topics.save(user_id, [(summary, [row["id"] for row in rows])])
    return topic


@pytest.fixture
def world(make_deps: Callable[..., Deps], make_messages: Callable[..., list[NewMessage]]) -> World:
    return build_world(make_deps(), make_messages)


def build_world(deps: Deps, make_messages: Callable[..., list[NewMessage]]) -> World:
    def topic(user_id: int, summary: str, contents: list[str], prefix: str) -> TopicRow:
        return save_topic(deps, user_id, summary, contents, prefix, make_messages)

    return World(
        deps=deps,
        vllm=topic(
            USER,
            "Setting up vLLM for Qwen3 on the H100",
            ["How do I configure vLLM on the H100?", "Use tensor parallel 2 and fp8 weights."],
            "vllm",
        ),
        petrov=topic(
            USER,
            "Petrov from ProjectX and his trip to Berlin",
            ["Remember Petrov from ProjectX?", "Yes, he led the Berlin migration."],
            "petrov",
        ),
        docker=topic(
            USER,
            "A quick Docker question",
            ["Why is my Docker image so big?", "Use a multi-stage build."],
            "docker",
        ),
        thesis=topic(
            USER,
            "The long thesis discussion",
            ["t" * LARGE_MESSAGE_CHARS, "a" * LARGE_MESSAGE_CHARS],
            "thesis",
        ),
        foreign=topic(
            OTHER_USER,
            "Rocket launch preparations",
            [f"Note that {SECRET}.", "Noted, keep it secret."],
            "secret",
        ),
        petrov_person=deps.store.people.add(USER, "Petrov", bio="colleague from ProjectX")["id"],
    )


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ScriptedOpenAI]:
    async with ScriptedOpenAI() as scripted:
        yield scripted


@pytest.fixture
def llm_world(
    make_deps: Callable[..., Deps],
    make_messages: Callable[..., list[NewMessage]],
    server: ScriptedOpenAI,
) -> World:
    """The world, with the reranker model pointed at the scripted server."""
    return build_world(make_deps(models={"reranker": server.chat_model()}), make_messages)


async def rerank(
    world: World,
    *,
    candidates: list[TopicCandidate] | None = None,
    people: list[PersonCandidate] | None = None,
    **context: Any,
) -> dict[str, Any]:
    graph = build_reranker_graph(world.deps).compile()
    return await graph.ainvoke(
        {
            "query": "Petrov from ProjectX, the Berlin trip and vLLM on H100",
            "user_message": "Remember Petrov? What did we set up on the H100?",
            "profile": ["Works as an ML engineer", "Lives in Lisbon"],
            "candidates": world.candidates if candidates is None else candidates,
            "people_candidates": world.people if people is None else people,
        },
        context=ResponseContext(user_id=USER, now_iso=NOW, **context),
    )


def request_body(server: ScriptedOpenAI, index: int) -> dict[str, Any]:
    return server.chat_requests[index].json_body


def tool_results(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "tool")


def topic_ids(result: dict[str, Any]) -> list[int]:
    return [topic["id"] for topic in result["selected_topics"]]


def answer(topics: list[dict[str, Any]], people: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"topics": topics, "people": people or []})


# -- the happy path ------------------------------------------------------------------


async def test_forced_tool_call_then_json_answer_selects_in_order(
    llm_world: World, server: ScriptedOpenAI
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

    assert result == {
        "selected_topics": [
            {
                "id": w.petrov["id"],
                "reason": "Petrov from ProjectX, as asked",
                "excerpt": None,
                "score": 0.8,
            },
            {"id": w.vllm["id"], "reason": "The H100 setup", "excerpt": None, "score": 0.9},
        ],
        "selected_people": [{"id": w.petrov_person, "reason": "The Petrov the user means"}],
        "rerank_fallback": None,
        "rerank_dropped_ids": 0,
        "rerank_llm_calls": 2,
    }
    assert server.unscripted == []


async def test_a_second_tool_call_within_the_limit_loads_more_and_is_answered(
    llm_world: World, server: ScriptedOpenAI
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
    assert topic_ids(result) == [w.docker["id"]]
    assert result["rerank_fallback"] is None
    assert result["rerank_llm_calls"] == 3


# -- every row of the fallback table --------------------------------------------------


@pytest.mark.parametrize(
    "failure", [http_error(500, "provider down"), drop_connection()], ids=["http_500", "dropped"]
)
async def test_api_error_before_the_tool_call_falls_back_to_vector_order(
    llm_world: World, server: ScriptedOpenAI, failure
):
    server.script(failure)

    result = await rerank(llm_world, rerank_max_topics=2)

    assert result["rerank_fallback"] == "api_error"
    assert topic_ids(result) == [llm_world.vllm["id"], llm_world.petrov["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {"vector order (api_error)"}
    assert [topic["score"] for topic in result["selected_topics"]] == [0.9, 0.8]
    assert result["selected_people"] == [
        {"id": llm_world.petrov_person, "reason": "vector order (api_error)"}
    ]
    assert result["rerank_llm_calls"] == 1


async def test_timeout_before_the_tool_call_falls_back_to_vector_order_within_budget(
    llm_world: World, server: ScriptedOpenAI
):
    server.script(delay(10, then=tool_call("get_topics_content", {"ids": [1]})))

    started = time.monotonic()
    result = await rerank(llm_world, rerank_timeout_s=0.5)

    assert time.monotonic() - started < 3
    assert result["rerank_fallback"] == "timeout_before_tool"
    assert topic_ids(result) == [topic["id"] for topic in llm_world.candidates]
    assert result["selected_topics"][0]["reason"] == "vector order (timeout_before_tool)"


async def test_a_reply_without_the_tool_call_is_a_protocol_violation(
    llm_world: World, server: ScriptedOpenAI
):
    w = llm_world
    server.script(reply(answer([{"id": w.docker["id"], "reason": "skipped the tool"}])))

    result = await rerank(w)

    assert result["rerank_fallback"] == "protocol_violation"
    assert topic_ids(result) == [topic["id"] for topic in w.candidates]
    assert result["rerank_llm_calls"] == 1
    assert len(server.chat_requests) == 1


async def test_invalid_json_after_the_tool_call_takes_the_requested_ids_in_order(
    llm_world: World, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.vllm["id"]]}),
        raw_content("Sorry, I cannot decide."),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "invalid_json"
    assert topic_ids(result) == [w.docker["id"], w.vllm["id"]]
    assert result["selected_topics"][0] == {
        "id": w.docker["id"],
        "reason": "requested by the reranker (invalid_json)",
        "excerpt": None,
        "score": 0.7,
    }
    assert result["rerank_llm_calls"] == 2


async def test_json_of_the_wrong_shape_is_invalid_json(llm_world: World, server: ScriptedOpenAI):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}),
        reply(json.dumps({"choice": w.docker["id"]})),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "invalid_json"
    assert topic_ids(result) == [w.petrov["id"]]


async def test_timeout_after_the_tool_call_takes_the_requested_ids(
    llm_world: World, server: ScriptedOpenAI
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
    assert topic_ids(result) == [w.thesis["id"], w.petrov["id"]]
    assert (
        result["selected_topics"][1]["reason"] == "requested by the reranker (timeout_after_tool)"
    )


async def test_api_error_after_the_tool_call_takes_the_requested_ids(
    llm_world: World, server: ScriptedOpenAI
):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.petrov["id"]]}), http_error(503, "overloaded")
    )

    result = await rerank(w)

    assert result["rerank_fallback"] == "api_error"
    assert topic_ids(result) == [w.petrov["id"]]
    assert result["selected_topics"][0]["reason"] == "requested by the reranker (api_error)"


async def test_tool_calls_past_the_limit_take_the_ids_requested_so_far(
    llm_world: World, server: ScriptedOpenAI
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
    assert topic_ids(result) == [w.petrov["id"], w.docker["id"], w.vllm["id"]]
    assert result["rerank_llm_calls"] == 4
    assert len(server.chat_requests) == 4
    assert server.unscripted == []


async def test_requested_ids_none_of_which_are_candidates_fall_back_to_vector_order(
    llm_world: World, server: ScriptedOpenAI
):
    w = llm_world
    server.script(tool_call("get_topics_content", {"ids": [9999]}), raw_content("???"))

    result = await rerank(w, rerank_max_topics=1)

    assert result["rerank_fallback"] == "invalid_json"
    assert topic_ids(result) == [w.vllm["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (invalid_json)"
    assert result["rerank_dropped_ids"] == 1


async def test_without_a_model_the_vector_order_is_used(world: World):
    result = await rerank(world, rerank_max_topics=3)

    assert result["rerank_fallback"] == "no_model"
    assert topic_ids(result) == [world.vllm["id"], world.petrov["id"], world.docker["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (no_model)"
    assert result["rerank_llm_calls"] == 0


async def test_without_candidates_nothing_is_asked_and_nothing_selected(
    llm_world: World, server: ScriptedOpenAI
):
    result = await rerank(llm_world, candidates=[], people=[])

    assert result == {
        "selected_topics": [],
        "selected_people": [],
        "rerank_fallback": "no_candidates",
        "rerank_dropped_ids": 0,
        "rerank_llm_calls": 0,
    }
    assert server.chat_requests == []


# -- what the model may name -----------------------------------------------------------


async def test_ids_outside_the_candidates_are_dropped_and_counted(
    llm_world: World, server: ScriptedOpenAI
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

    assert topic_ids(result) == [w.vllm["id"]]
    assert result["selected_people"] == []
    assert result["rerank_dropped_ids"] == 3
    assert result["rerank_fallback"] is None


async def test_the_old_bare_list_answer_is_accepted(llm_world: World, server: ScriptedOpenAI):
    w = llm_world
    server.script(
        tool_call("get_topics_content", {"ids": [w.docker["id"], w.vllm["id"]]}),
        reply(json.dumps([w.docker["id"], w.vllm["id"]])),
    )

    result = await rerank(w)

    assert result["rerank_fallback"] is None
    assert topic_ids(result) == [w.docker["id"], w.vllm["id"]]
    assert {topic["reason"] for topic in result["selected_topics"]} == {NO_REASON}


async def test_excerpts_are_kept_only_for_topics_over_the_threshold(
    llm_world: World, server: ScriptedOpenAI
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
    llm_world: World, server: ScriptedOpenAI
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
    assert "Rocket launch" not in wire and SECRET not in wire
    loaded = tool_results(request_body(server, 1))
    assert f"=== Topic {w.vllm['id']} ===" in loaded
    assert f"Topic {w.foreign['id']} " not in loaded
    assert topic_ids(result) == [w.vllm["id"]]
    assert result["rerank_dropped_ids"] == 1


async def test_without_a_model_a_forged_candidate_is_not_selected(world: World):
    forged = [candidate(world.foreign, 0.99), *world.candidates]

    result = await rerank(world, candidates=forged, rerank_max_topics=1)

    assert topic_ids(result) == [world.vllm["id"]]


async def test_the_tool_reads_only_the_run_users_topics(world: World):
    """The tool runs in a ToolNode of a plain graph: the user id comes from the run's
    context, whatever ids the model asks for."""
    builder = StateGraph(MessagesState, context_schema=ResponseContext)
    builder.add_node("tools", ToolNode([make_get_topics_content_tool(world.deps)]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    call = AIMessage(
        content="",
        tool_calls=[
            {"name": "get_topics_content", "args": {"ids": [world.foreign["id"]]}, "id": "c1"}
        ],
    )

    as_user = await graph.ainvoke({"messages": [call]}, context=ResponseContext(user_id=USER))
    as_owner = await graph.ainvoke(
        {"messages": [call]}, context=ResponseContext(user_id=OTHER_USER)
    )

    (denied,) = [m for m in as_user["messages"] if isinstance(m, ToolMessage)]
    assert denied.content == NOTHING_FOUND
    assert str(world.foreign["id"]) not in denied.content
    (allowed,) = [m for m in as_owner["messages"] if isinstance(m, ToolMessage)]
    assert SECRET in allowed.content


# -- the tool result format ------------------------------------------------------------


def test_topic_content_follows_the_seed_format_in_the_requested_order(world: World):
    text = render_topics_content(
        world.deps.store, USER, [world.petrov["id"], world.foreign["id"], world.docker["id"]]
    )

    petrov, docker = text.split("\n\n=== Topic ")
    assert petrov == (
        f"=== Topic {world.petrov['id']} ===\n"
        f"Date: 2026-03-02 | 2 msgs | {size_label(world.petrov['size_chars'])}\n"
        "Topic: Petrov from ProjectX and his trip to Berlin\n\n"
        "[User (Alexei) (2026-03-02 09:00)]: Remember Petrov from ProjectX?\n"
        "[Assistant (2026-03-02 09:01)]: Yes, he led the Berlin migration."
    )
    assert docker.startswith(f"{world.docker['id']} ===\n")
    assert SECRET not in text


def test_topic_content_uses_excerpts_and_respects_the_size_cap(world: World):
    ids = [world.thesis["id"], world.vllm["id"]]
    with_excerpt = render_topics_content(
        world.deps.store, USER, ids, excerpts={world.thesis["id"]: "[User]: the methods chapter"}
    )
    assert "~26K chars" in with_excerpt
    assert "[User]: the methods chapter" in with_excerpt
    assert "t" * 100 not in with_excerpt
    assert "Use tensor parallel 2 and fp8 weights." in with_excerpt

    small_first = [world.vllm["id"], world.thesis["id"]]
    vllm_alone = render_topics_content(world.deps.store, USER, small_first[:1])
    for cap in (len(vllm_alone) + 200, 20_000, 5_000, len(vllm_alone)):
        capped = render_topics_content(world.deps.store, USER, small_first, max_chars=cap)
        assert len(capped) <= cap
        assert capped.startswith(vllm_alone)
    cut = render_topics_content(world.deps.store, USER, small_first, max_chars=20_000)
    assert cut.endswith("[… 1 more message not shown: size limit]")
    assert "t" * LARGE_MESSAGE_CHARS in cut and "a" * 100 not in cut
    headers_only = render_topics_content(
        world.deps.store, USER, small_first, max_chars=len(vllm_alone) + 200
    )
    assert headers_only.endswith(
        "Topic: The long thesis discussion\n\n[… 2 more messages not shown: size limit]"
    )
    assert render_topics_content(world.deps.store, USER, small_first, max_chars=0) == ""


def test_size_labels():
    assert size_label(800) == "~800 chars"
    assert size_label(16_200) == "~16K chars"
    assert size_label(47_000) == "~47K chars"


# -- pure helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[42, 18, 5]", [42, 18, 5]),
        ('{"topics": [42, 18], "people": []}', [42, 18]),
        ('```json\n{"topics": [{"id": "42", "reason": "r"}]}\n```', [42]),
        ('Here you go: {"topics": [{"id": 7, "reason": "r", "excerpt": "e"}]}', [7]),
        ('{"people": [{"id": 3, "reason": "r"}]}', []),
        ("[]", []),
    ],
)
def test_parse_answer_accepts_the_current_and_the_old_form(text: str, expected: list[int]):
    assert [topic["id"] for topic in parse_answer(text)["topics"]] == expected


@pytest.mark.parametrize(
    "text",
    ["not json at all", '{"answer": 42}', '{"topics": [{"reason": "no id"}]}', '{"topics": "42"}'],
)
def test_parse_answer_rejects_what_is_not_an_answer(text: str):
    with pytest.raises(LLMOutputError):
        parse_answer(text)


def plain_candidates(*sizes: int) -> list[TopicCandidate]:
    return [
        TopicCandidate(
            id=index + 1,
            summary=f"topic {index + 1}",
            date="2026-01-01",
            message_count=2,
            size_chars=size,
            score=1.0 - index / 10,
            vector_score=None,
        )
        for index, size in enumerate(sizes)
    ]


def test_select_answer_applies_limits_and_ignores_repeats():
    candidates = plain_candidates(*[1000] * 7)
    people = [PersonCandidate(id=i, name=f"p{i}", description="", score=0.5) for i in (1, 2, 3)]
    picks = parse_answer(json.dumps({"topics": [7, 7, 6, 5, 4, 3, 2, 1], "people": [3, 99, 1, 2]}))

    selection = select_answer(
        picks, candidates, people, max_topics=5, max_people=2, excerpt_threshold_chars=25_000
    )

    assert [topic["id"] for topic in selection.topics] == [7, 6, 5, 4, 3]
    assert [person["id"] for person in selection.people] == [3, 1]
    assert selection.dropped_ids == 1


def test_fallback_selections_keep_order_limits_and_scores():
    candidates = plain_candidates(*[1000] * 7)

    by_vector = vector_selection(candidates, [], "no_model", max_topics=5, max_people=10)
    by_request = requested_selection(
        [6, 2, 6, 77, 3, 4, 5, 1], candidates, [], "invalid_json", max_topics=5, max_people=10
    )

    assert [topic["id"] for topic in by_vector.topics] == [1, 2, 3, 4, 5]
    assert [topic["id"] for topic in by_request.topics] == [6, 2, 3, 4, 5]
    assert by_request.topics[0]["score"] == candidates[5]["score"]
    assert by_request.dropped_ids == 1


def test_requested_ids_come_from_the_content_tool_calls_only():
    message = AIMessage(
        content="",
        tool_calls=[
            {"name": "get_topics_content", "args": {"ids": [4, "5", "x", 6]}, "id": "a"},
            {"name": "search_history", "args": {"ids": [9]}, "id": "b"},
            {"name": "get_topics_content", "args": {"ids": "7"}, "id": "c"},
        ],
    )
    assert requested_topic_ids(message) == [4, 5, 6]


# -- topology -----------------------------------------------------------------------------


def test_every_fallback_row_is_an_edge_of_the_graph(deps: Deps):
    mermaid = build_reranker_graph(deps).compile().get_graph(xray=True).draw_mermaid()
    edges = {line.strip() for line in mermaid.splitlines() if "-->" in line or ".->" in line}

    assert edges == {
        "__start__ --> prepare;",
        "prepare -. &nbsp;ask_model&nbsp; .-> request_content;",
        "prepare -. &nbsp;no_model / no_candidates&nbsp; .-> vector_fallback;",
        "request_content -. &nbsp;tool_call&nbsp; .-> load_content;",
        "request_content -. &nbsp;api_error / timeout_before_tool / protocol_violation&nbsp; "
        ".-> vector_fallback;",
        "load_content --> choose;",
        "choose -. &nbsp;tool_call&nbsp; .-> load_content;",
        "choose -. &nbsp;answer&nbsp; .-> finish;",
        "choose -. &nbsp;invalid_json / tool_call_limit / timeout_after_tool / api_error&nbsp; "
        ".-> requested_fallback;",
        "finish --> __end__;",
        "vector_fallback --> __end__;",
        "requested_fallback --> __end__;",
    }
