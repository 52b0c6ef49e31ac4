"""The response graph without a server or an index: its topology, its routers, and the nodes
that decide on their own (no model configured, pure helpers).

Whole turns over real SQLite + Chroma and the real `ChatOpenAI`:
tests/integration/test_response_graph.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.state import ResponseState
from graphs.response import build_response_graph
from nodes.response.enrich import clean_query, make_enrich, raw_query
from nodes.response.finalize import sanitize, strip_runaway_json
from nodes.response.offline_answer import language_of
from nodes.response.ranking.fusion import rrf_scores, topic_votes
from nodes.response.ranking.recall import search_queries
from nodes.response.respond import make_respond, reply_command, route_after_tools

USER = 1
NOW = "2026-03-20T10:00:00+00:00"


def runtime(**context: Any) -> Runtime[ResponseContext]:
    return Runtime(context=ResponseContext(user_id=USER, now_iso=NOW, **context))


# -- topology ---------------------------------------------------------------------------


TEXT_FALLBACK = "no_model / api_error / timeout / empty_reply"


def test_topology_snapshot_keeps_every_edge(deps: Deps):
    mermaid = build_response_graph(deps).compile().get_graph(xray=True).draw_mermaid()
    edges = [
        "__start__ --> store_question;",
        "store_question --> enrich;",
        "enrich -. &nbsp;query&nbsp; .-> search;",
        f"enrich -. &nbsp;{TEXT_FALLBACK}&nbsp; .-> raw_query;",
        "raw_query --> search;",
        "search --> rerank\\3aprepare;",
        "rerank\\3a__end__ --> summarise;",
        "summarise -. &nbsp;summary&nbsp; .-> assemble;",
        f"summarise -. &nbsp;{TEXT_FALLBACK}&nbsp; .-> extractive_summary;",
        "extractive_summary --> assemble;",
        "assemble --> respond;",
        "respond -. &nbsp;tool_calls&nbsp; .-> tools;",
        "respond -. &nbsp;retry_empty&nbsp; .-> respond;",
        f"respond -. &nbsp;{TEXT_FALLBACK}&nbsp; .-> offline_answer;",
        "respond -. &nbsp;answer&nbsp; .-> finalize;",
        "tools -. &nbsp;continue&nbsp; .-> respond;",
        "tools -. &nbsp;tool_budget_spent&nbsp; .-> synthesize;",
        "synthesize -. &nbsp;retry_empty&nbsp; .-> synthesize;",
        f"synthesize -. &nbsp;{TEXT_FALLBACK}&nbsp; .-> offline_answer;",
        "synthesize -. &nbsp;answer&nbsp; .-> finalize;",
        "offline_answer --> finalize;",
        "finalize --> __end__;",
        # The reranker subgraph is drawn inside, with its fallback edges.
        "rerank\\3aprepare -. &nbsp;no_model / no_candidates / disabled&nbsp; .-> "
        "rerank\\3avector_fallback;",
    ]
    missing = [edge for edge in edges if edge not in mermaid]
    assert not missing, f"edges gone from the response graph: {missing}\n{mermaid}"
    assert "tools(tools<hr/><small><em>__tools = search_history, manage_memory, " in mermaid


# -- routers (pure) -----------------------------------------------------------------------


def state_with(**values: Any) -> ResponseState:
    return ResponseState(text="q", messages=[HumanMessage("q")], **values)


def test_a_reply_picks_the_edge_after_respond():
    calling = AIMessage("", tool_calls=[{"name": "search_history", "args": {}, "id": "c1"}])
    tools = reply_command(calling, state_with(tool_rounds=1), "respond")
    assert (tools.goto, tools.update["tool_rounds"]) == ("tools", 2)
    answer = reply_command(AIMessage("Hi"), state_with(), "respond")
    assert (answer.goto, answer.update["answer"], answer.update["answered_by"]) == (
        "finalize",
        "Hi",
        "responder",
    )
    first_empty = reply_command(AIMessage("</s>"), state_with(), "respond")
    assert (first_empty.goto, first_empty.update) == ("respond", {"empty_replies": 1})
    second_empty = reply_command(AIMessage(" "), state_with(empty_replies=1), "respond")
    assert (second_empty.goto, second_empty.update) == (
        "offline_answer",
        {"empty_replies": 2, "respond_fallback": "empty_reply"},
    )


async def test_respond_without_a_model_takes_the_memory_only_edge(deps: Deps):
    command = await make_respond(deps, [])(state_with(), runtime())
    assert (command.goto, command.update["respond_fallback"]) == ("offline_answer", "no_model")


def test_route_after_tools_spends_the_budget():
    assert route_after_tools(state_with(tool_rounds=1), runtime(max_tool_iterations=2)) == (
        "continue"
    )
    assert route_after_tools(state_with(tool_rounds=2), runtime(max_tool_iterations=2)) == (
        "tool_budget_spent"
    )


def test_a_reply_picks_the_edge_after_synthesis():
    calling = AIMessage("Done", tool_calls=[{"name": "search_history", "args": {}, "id": "c1"}])
    answer = reply_command(calling, state_with(), "synthesize")
    assert (answer.goto, answer.update["answer"], answer.update["answered_by"]) == (
        "finalize",
        "Done",
        "synthesis",
    )
    assert reply_command(AIMessage(""), state_with(), "synthesize").goto == "synthesize"
    second_empty = reply_command(AIMessage(""), state_with(empty_replies=1), "synthesize")
    assert second_empty.goto == "offline_answer"


# -- enrich --------------------------------------------------------------------------------


async def test_enrich_without_a_model_searches_with_the_raw_text(deps: Deps):
    enrich = make_enrich(deps)
    command = await enrich(ResponseState(text="Что с мениском?"), runtime())
    assert (command.goto, command.update) == ("raw_query", {"enrich_fallback": "no_model"})
    assert await raw_query(ResponseState(text="Что с мениском?")) == {"query": "Что с мениском?"}


def test_clean_query_keeps_the_first_line_without_quotes_or_label():
    assert clean_query('Query: "Berlin half marathon target time"\nbecause…') == (
        "Berlin half marathon target time"
    )
    assert clean_query("\n\n") == ""


# -- search -------------------------------------------------------------------------------


def test_rrf_counts_every_appearance_with_k_60():
    scores = rrf_scores([[7, 8], [8, 8, 9]], k=60)
    assert scores[7] == pytest.approx(1 / 61)
    assert scores[8] == pytest.approx(1 / 62 + 1 / 61 + 1 / 62)
    assert scores[9] == pytest.approx(1 / 63)


def test_none_holds_a_rank_and_votes_for_nothing():
    scores = rrf_scores([[None, 8, None, 9]], k=60)
    assert scores == {8: pytest.approx(1 / 62), 9: pytest.approx(1 / 64)}


def test_two_messages_of_a_topic_vote_for_it_from_one_list():
    """The third and later hits of topic 1 keep their ranks but vote for nothing;
    unarchived messages (None) hold no rank."""
    assert topic_votes([1, None, 1, 2, 1, 1, 2]) == [1, 1, 2, None, None, 2]
    assert topic_votes([1, 1, 1], cap=1) == [1, None, None]


def test_a_short_topic_with_the_best_hits_outranks_a_long_one_with_many_weak_ones():
    """Topic 2 holds the two best message hits; topic 1 holds the eight after them."""
    hits = [2, 2, *[1] * 8]
    uncapped = rrf_scores([hits], k=60)
    capped = rrf_scores([topic_votes(hits)], k=60)
    assert uncapped[1] > uncapped[2]
    assert capped[2] > capped[1]


def test_search_queries_are_distinct_raw_first():
    assert search_queries("Knee?", "knee?  ") == ["Knee?"]
    assert search_queries("Knee?", "knee physio Frau Keller") == [
        "Knee?",
        "knee physio Frau Keller",
    ]
    assert search_queries("Knee?", None) == ["Knee?"]


# -- the memory-only answer ------------------------------------------------------------------


def test_language_of_the_message():
    assert language_of("Что ты советовал посмотреть в Валенсии?") == "ru"
    assert language_of("What about Project Hail Mary?") == "en"


# -- finalize -----------------------------------------------------------------------------


def test_sanitize_strips_artefacts_and_runaway_json():
    blocks = "\n".join(f'```json\n{{"step": {i}}}\n```' for i in range(4))
    text, anomalies = sanitize(f"The answer is 42.</tool_code></s>\n\n{blocks}\n\nBye")
    assert text == "The answer is 42.\n\nBye"
    assert anomalies == ["artefact </tool_code>", "artefact </s>", "runaway JSON (4 blocks)"]


def test_two_json_blocks_or_separated_ones_are_not_runaway():
    two = '```json\n{"a": 1}\n```\n```json\n{"b": 2}\n```'
    assert strip_runaway_json(two) == (two, 0)
    apart = '```json\n{"a": 1}\n```\ntext\n```json\n{"b": 2}\n```\n```json\n{"c": 3}\n```'
    assert strip_runaway_json(apart) == (apart, 0)
    unlabelled = "\n".join(['```\n{"a": 1}\n```'] * 3)
    assert strip_runaway_json(unlabelled) == ("", 3)
