"""The reranker's choice without a model, its pure helpers, and its topology (seed 001).

Parsing the model's answer, applying the limits, the fallback selections in vector or
requested order, and every fallback row of the seed's table as an edge of the graph.
The subgraph driven by the real `ChatOpenAI` over the wire: tests/integration.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from core.deps import Deps
from core.found import PersonCandidate, TopicCandidate
from graphs.reranker import build_reranker_graph
from nodes.response.rerank_selection import (
    fallback_selection,
    fill_candidates,
    parse_answer,
    requested_topic_ids,
    select_answer,
)
from nodes.shared.structured import LLMOutputError
from tests.support.found import found
from tests.support.worlds import RerankWorld, candidate, rerank, selected_ids

# -- without a model ---------------------------------------------------------------------


async def test_without_a_model_the_vector_order_is_used(world: RerankWorld):
    result = await rerank(world, rerank_max_topics=3)

    assert result["rerank_fallback"] == "no_model"
    assert selected_ids(result) == [world.vllm["id"], world.petrov["id"], world.docker["id"]]
    assert result["selected_topics"][0]["reason"] == "vector order (no_model)"
    assert result["selected_by_search_order"] is True
    assert result["rerank_llm_calls"] == 0


async def test_without_a_model_a_forged_candidate_is_not_selected(world: RerankWorld):
    forged = [candidate(world.foreign, 0.99), *world.candidates]

    result = await rerank(world, candidates=forged, rerank_max_topics=1)

    assert selected_ids(result) == [world.vllm["id"]]


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
            fused_score=1.0 - index / 10,
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
    assert selection.by_search_order is False


def test_fallback_selections_keep_order_limits_and_scores():
    candidates = plain_candidates(*[1000] * 7)

    by_vector = fallback_selection(candidates, [], "no_model", max_topics=5, max_people=10)
    by_request = fallback_selection(
        candidates,
        [],
        "invalid_json",
        requested_ids=[6, 2, 6, 77, 3, 4, 5, 1],
        max_topics=5,
        max_people=10,
    )

    assert [topic["id"] for topic in by_vector.topics] == [1, 2, 3, 4, 5]
    assert [topic["id"] for topic in by_request.topics] == [6, 2, 3, 4, 5]
    assert by_request.topics[0]["score"] == candidates[5]["score"]
    assert by_request.dropped_ids == 1
    assert (by_vector.by_search_order, by_request.by_search_order) == (True, False)


def test_only_a_selection_the_search_order_made_offers_the_other_candidates():
    candidates = plain_candidates(*[1000] * 7)
    by_vector = fallback_selection(candidates, [], "api_error", max_topics=3, max_people=10)
    state = {
        "found": found(topics=candidates),
        "selected_topics": by_vector.topics,
        "rerank_fallback": "api_error",
        "selected_by_search_order": by_vector.by_search_order,
    }

    more = fill_candidates(state)

    assert [topic["id"] for topic in more] == [4, 5, 6, 7]
    assert [topic["score"] for topic in more] == [c["score"] for c in candidates[3:]]
    assert {topic["reason"] for topic in more} == {"vector order (api_error)"}
    assert {topic["excerpt"] for topic in more} == {None}
    # The model's choice (or the ids it asked for) is the context's: nothing is added.
    assert fill_candidates({**state, "selected_by_search_order": False}) == []
    assert fill_candidates({**state, "selected_by_search_order": None}) == []


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
        "prepare -. &nbsp;no_model / no_candidates / disabled&nbsp; .-> vector_fallback;",
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
