"""Recall on the bundled example session with no LLM at all (the issue's "done when").

The 196-message demo session is archived by the non-LLM memory graph; each question of
`demo_questions.json` goes through the response graph's retrieval (enrich → search →
rerank, all on their non-LLM paths) and counts as recalled when one of the top 5 topics
holds an evidence message. Questions in Russian and English, and cross-lingual ones
(asked in the other language than the evidence), are reported separately.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langgraph.runtime import Runtime

from app.memory import archive_user
from app.turns import run_turn
from core.context import ResponseContext
from core.deps import Deps
from core.models import ModelRegistry
from core.state import RerankInput, ResponseState
from graphs.reranker import build_reranker_graph
from graphs.response import build_retrieval_graph
from nodes.response.enrich import make_enrich, raw_query
from nodes.response.offline_answer import MAX_QUOTED_TOPICS
from nodes.response.reranker import make_rerank
from nodes.response.search import make_search
from stores.embedders import Embedder
from stores.saved_sessions import read_session
from tests.support.demo import DemoArchive
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call
from tests.support.paths import DEMO_QUESTIONS, DEMO_SESSION
from tests.support.services import local_deps

pytestmark = pytest.mark.timeout(120)

USER = 1
NOW = "2026-03-21T09:00:00+01:00"
TOP = 5
QUESTIONS: list[dict[str, Any]] = json.loads(DEMO_QUESTIONS.read_text(encoding="utf-8"))
# Measured with the local USE embedder: 19/20 (ru 10/10, en 9/10, cross-lingual 8/9).
RECALL_FLOOR = {"all": 0.9, "ru": 0.9, "en": 0.8, "cross-lingual": 0.75}

_CYRILLIC = re.compile(r"[\u0400-\u04FF]")


def evidence_language(deps: Deps, user_id: int, evidence: list[str]) -> str:
    contents = [
        m["content"] for m in deps.store.messages.all_of(user_id) if m["external_id"] in evidence
    ]
    return "ru" if any(_CYRILLIC.search(content) for content in contents) else "en"


async def retrieve(deps: Deps, user_id: int, question: str) -> ResponseState:
    """The response graph's retrieval nodes, in their order, without storing anything."""
    runtime = Runtime(
        context=ResponseContext.from_settings(deps.settings, user_id=user_id, now_iso=NOW)
    )
    state = ResponseState(text=question)
    enriched = await make_enrich(deps)(state, runtime)
    state.update(enriched.update)
    if enriched.goto == "raw_query":
        state.update(await raw_query(state))
    state.update(await make_search(deps)(state, runtime))
    reranker = build_reranker_graph(deps).compile()
    state.update(await make_rerank(reranker)(state, runtime))
    return state


async def test_recall_on_the_example_session(demo_archive: DemoArchive):
    deps = demo_archive.deps
    hits: dict[str, list[bool]] = defaultdict(list)
    misses = []
    for question in QUESTIONS:
        state = await retrieve(deps, USER, question["question"])
        assert state["rerank_fallback"] == "no_model"
        topic_ids = [topic["id"] for topic in state["selected_topics"]][:TOP]
        members = deps.store.messages.external_ids_by_topic(USER, topic_ids)
        found = any(set(question["evidence"]) & set(ids) for ids in members.values())
        groups = ["all", question["lang"]]
        if evidence_language(deps, USER, question["evidence"]) != question["lang"]:
            groups.append("cross-lingual")
        for group in groups:
            hits[group].append(found)
        if not found:
            misses.append(question["question"])
    recall = {group: sum(found) / len(found) for group, found in hits.items()}
    report = ", ".join(
        f"{group} {sum(hits[group])}/{len(hits[group])} = {recall[group]:.2f}"
        for group in ("all", "ru", "en", "cross-lingual")
    )
    print(f"\nrecall@{TOP} without LLM: {report}; missed: {misses}")
    for group, floor in RECALL_FLOOR.items():
        assert recall[group] >= floor, f"{group} recall {recall[group]:.2f} < {floor}: {report}"


async def test_retrieval_is_per_user_on_identical_archives(demo_archive: DemoArchive):
    deps = demo_archive.deps
    own = {1: set(demo_archive.topic_ids_first[1]), 2: set(demo_archive.topic_ids_first[2])}
    assert not own[1] & own[2]
    for user_id in (1, 2):
        for question in QUESTIONS[::4]:
            state = await retrieve(deps, user_id, question["question"])
            assert {c["id"] for c in state["found"]["topics"]} <= own[user_id]
            assert {t["id"] for t in state["selected_topics"]} <= own[user_id]


async def retrieval_path(deps: Deps, question: str) -> tuple[list[tuple[str, str]], dict]:
    """The retrieval graph run on `question`, streamed with its subgraphs: each node that
    reported an update, as (the first part of its namespace, its name) in the order run
    (the root graph's namespace is ""), and the final state."""
    graph = build_retrieval_graph(deps).compile()
    context = ResponseContext.from_settings(deps.settings, user_id=USER, now_iso=NOW)
    path: list[tuple[str, str]] = []
    async for namespace, update in graph.astream(
        {"text": question}, context=context, stream_mode="updates", subgraphs=True
    ):
        scope = namespace[0].split(":")[0] if namespace else ""
        path.extend((scope, node) for node in update)
    state = await graph.ainvoke({"text": question}, context=context)
    return path, state


async def test_without_a_model_rerank_takes_the_subgraphs_no_model_edge(
    demo_archive: DemoArchive,
):
    """No reranker model: the subgraph runs and `prepare` takes its drawn edge to
    `vector_fallback`; the result is the subgraph's own on the same request."""
    deps = demo_archive.deps
    reranker = build_reranker_graph(deps).compile()
    context = ResponseContext.from_settings(deps.settings, user_id=USER, now_iso=NOW)
    for question in QUESTIONS[::3]:
        path, state = await retrieval_path(deps, question["question"])
        rerank_path = [node for scope, node in path if scope == "rerank"]
        assert rerank_path == ["prepare", "vector_fallback"], path
        assert state["rerank_fallback"] == "no_model"
        assert state["found"]["topics"]
        request = RerankInput(
            query=state["query"], user_message=state["text"], found=state["found"]
        )
        direct = await reranker.ainvoke(request, context=context)
        assert {key: state[key] for key in direct} == direct


async def test_with_a_model_the_reranker_subgraph_runs(
    demo_archive: DemoArchive, server: ScriptedOpenAI
):
    """The other side of the test above: with a reranker model, rerank runs the subgraph
    (its nodes report under their own namespace) and the model is asked."""
    server.script(tool_call("get_topics_content", {"ids": []}), reply('{"topics": []}'))
    deps = replace(demo_archive.deps, models=ModelRegistry.fixed({"reranker": server.chat_model()}))
    question = QUESTIONS[0]["question"]

    path, _ = await retrieval_path(deps, question)

    assert [node for scope, node in path if scope == "rerank"][:2] == [
        "prepare",
        "request_content",
    ], path
    assert len(server.chat_requests) >= 1


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def demo_deps(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> AsyncIterator[Deps]:
    """The example session archived for user 1 in a data dir of this module's own: the
    turns below store their questions and answers."""
    deps = local_deps(Path(tmp_path_factory.mktemp("demo-turns")) / "data", embedder)
    deps.indexer.store_messages(USER, read_session(DEMO_SESSION))
    await archive_user(deps, USER, archive_all=True)
    yield deps
    deps.close()


@pytest.mark.parametrize(
    "question",
    [
        q
        for q in QUESTIONS
        if q["question"].startswith(("Какой диагноз", "What shoes", "Что Sparkasse"))
    ],
    ids=lambda q: q["lang"] + ": " + q["question"][:30],
)
async def test_run_turn_without_llm_answers_from_the_recalled_topics(
    demo_deps: Deps, question: dict[str, Any]
):
    result = await run_turn(demo_deps, USER, question["question"], now_iso=NOW)
    assert list(result) == [
        "answer",
        "topics",
        "people",
        "facts",
        "fallback",
        "context_tokens",
        "llm_calls",
        "answered_by",
        "partial",
        "message_id",
        "answer_id",
        "sources",
    ]
    assert (result["answered_by"], result["partial"]) == ("memory", False)
    # Its sources are the topics it quotes (the best-ranked messages' topics, best first).
    quoted = result["sources"]["topics"]
    assert 0 < len(quoted) <= MAX_QUOTED_TOPICS
    assert all(" ".join(t["summary"].split())[:40] in result["answer"] for t in quoted)
    assert result["fallback"] == "no_model"
    assert result["llm_calls"] == 0
    assert 0 < len(result["topics"]) <= TOP
    scores = [topic["score"] for topic in result["topics"]]
    assert scores == sorted(scores, reverse=True)
    for topic in result["topics"]:
        assert set(topic) == {"id", "reason", "score", "start_msg_id", "end_msg_id", "message_ids"}
        assert topic["start_msg_id"] == topic["message_ids"][0]
        assert topic["end_msg_id"] == topic["message_ids"][-1]
        assert all(re.fullmatch(r"m\d{3}", i) for i in topic["message_ids"])
    holding = [t for t in result["topics"] if set(question["evidence"]) & set(t["message_ids"])]
    assert holding, result["topics"]
    assert result["context_tokens"] > 0
    answer = result["answer"]
    assert answer.startswith(("I can't compose", "Сейчас я не могу"))
    summaries = {
        t["id"]: t["summary"]
        for t in demo_deps.store.topics.by_ids(USER, [t["id"] for t in holding])
    }
    assert any(" ".join(summary.split())[:40] in answer for summary in summaries.values())
