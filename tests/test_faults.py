"""Provider faults through the real `ChatOpenAI` and the scripted OpenAI-compatible server.

Every agent that calls a model meets HTTP 500, 429 with Retry-After, a timeout, a dropped
connection, malformed, truncated, wrongly shaped and empty JSON, hallucinated ids and
endless tool calls, each on the wire. For each fault the expected behaviour is asserted
(the fallback edge taken and its reason, the retry made) and so are the storage
invariants: every stored message is still there with its content, after archiving each
message is in exactly one of its user's topics, a second archiving run creates nothing,
and the user's message of a turn is stored even when the turn fails.

The nodes' fallback logic is tested with fake models next to each node; here the faults
are real HTTP behaviour, so what is proven is that each one surfaces as an exception or
a reply the node handles, and that nothing stored is lost on the way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from app.memory import archive_user
from app.turns import answer_turn, compile_response_graph, run_turn
from bot.texts import ENGLISH
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.models import ModelRegistry
from core.records import NewMessage
from nodes.response.offline_answer import WORDING
from stores.embedders import Embedder
from stores.services import build_deps
from tests.conftest import isolated_settings, new_messages
from tests.support.bot_api_server import FakeUser
from tests.support.bot_harness import running_bot
from tests.support.openai_server import (
    ScriptedOpenAI,
    Step,
    delay,
    drop_connection,
    empty_reply,
    http_error,
    raw_content,
    reply,
    tool_call,
)

pytestmark = pytest.mark.timeout(60)

USER, OTHER_USER = 1, 2
NOW = "2026-03-20T10:00:00+00:00"
NOW_DT = datetime.fromisoformat(NOW)
CLIENT_TIMEOUT_S = 0.5
FIRST_DAY = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
THIRD_DAY = datetime.fromisoformat("2026-03-04T18:30:00+00:00")
CAT_TALK = [
    "Our cat Marzipan has chronic kidney disease, the vet put him on a renal diet.",
    "A renal diet helps; switch gradually over a week, mixing it with the old food.",
    "He refuses the renal food completely and only eats the old one.",
    "Try warming the wet renal food a little and offering small portions more often.",
    "Should I also give him more water? The vet mentioned subcutaneous fluids.",
    "Yes: a water fountain and wet food help, fluids only as the vet prescribes.",
]
POSTGRES_TALK = [
    "We're upgrading Postgres from 14 to 16 in docker compose; the db container won't start.",
    "PostgreSQL 16 cannot read a data directory initialised by 14: dump and restore it.",
    "On staging the dump and restore took 14 minutes.",
    "Then a 30 minute maintenance window is plenty.",
]
OTHER_SECRET = "the vault combination is 31-7-44"
CAT_QUESTION = "What did the vet say about Marzipan's kidneys and the renal diet?"


@dataclass(frozen=True)
class Fault:
    """What the provider answers to every call, the error the agent then sees (named in
    the log line of its fallback) and the fallback reason it records."""

    step: Step
    error: str
    reason: str


PROVIDER_FAULTS = {
    "http_500": Fault(http_error(500, "upstream exploded"), "OpenAIAPIError", "api_error"),
    "http_429": Fault(
        http_error(429, "slow down", retry_after=0.05), "OpenAIRateLimitError", "api_error"
    ),
    "timeout": Fault(delay(5.0, reply("{}")), "OpenAITimeoutError", "timeout"),
    "dropped_connection": Fault(drop_connection(), "OpenAIConnectionError", "api_error"),
}
JSON_FAULTS = {
    "malformed_json": Fault(
        raw_content("Sure! Two topics: the cat, and the cat again."),
        "reply is not JSON",
        "invalid_output",
    ),
    "truncated_json": Fault(
        raw_content('{"facts": [{"action": "add", "importance": 500'),
        "reply does not match",
        "invalid_output",
    ),
    "wrong_shape_json": Fault(
        raw_content('[{"title": "Marzipan"}]'), "reply does not match", "invalid_output"
    ),
    "empty_json": Fault(empty_reply(), "empty reply", "empty_reply"),
}


def assert_fell_back(caplog: pytest.LogCaptureFixture, agent: str, fault: Fault) -> None:
    """The agent's fallback was logged once per call with its reason and the error."""
    lines = [r.getMessage() for r in caplog.records if f"{agent} fell back" in r.getMessage()]
    assert lines, f"no fallback of the {agent} was logged"
    assert all(f"fell back: {fault.reason}: " in line and fault.error in line for line in lines)


JSON_AGENT_FAULTS = {**PROVIDER_FAULTS, **JSON_FAULTS}
ENOUGH = 12
"""Every scripted fault is repeated this often: more than any run here calls the model."""


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ScriptedOpenAI]:
    async with ScriptedOpenAI() as scripted:
        yield scripted


def chat_model(server: ScriptedOpenAI, *, max_retries: int = 0) -> ChatOpenAI:
    return server.chat_model(timeout=CLIENT_TIMEOUT_S, max_retries=max_retries)


def with_models(deps: Deps, **models: Any) -> Deps:
    """The same stores and embedder, with these chat models."""
    return dataclasses.replace(deps, models=ModelRegistry.fixed(models))


def told_twice() -> list[NewMessage]:
    """One conversation told on one day and again two days later: two chunks, two topics
    similar enough to merge."""
    return new_messages(CAT_TALK, prefix="a", start=FIRST_DAY) + new_messages(
        CAT_TALK, prefix="b", start=THIRD_DAY
    )


# -- storage invariants ---------------------------------------------------------------


def assert_all_stored(deps: Deps, user_id: int, sent: list[NewMessage]) -> None:
    stored = deps.store.messages.all_of(user_id)
    assert [(m["external_id"], m["role"], m["content"]) for m in stored] == [
        (m["external_id"], m["role"], m["content"]) for m in sent
    ]


def topic_snapshot(deps: Deps, user_id: int) -> dict[int, tuple[str, list[str]]]:
    topics = deps.store.topics.all_of(user_id)
    members = deps.store.messages.external_ids_by_topic(user_id, [topic["id"] for topic in topics])
    return {topic["id"]: (topic["summary"], members[topic["id"]]) for topic in topics}


def assert_archived_once(deps: Deps, user_id: int) -> None:
    """Every message in exactly one of the user's topics; topic counts and the index agree."""
    topics = {topic["id"]: topic for topic in deps.store.topics.all_of(user_id)}
    membership = Counter(message["topic_id"] for message in deps.store.messages.all_of(user_id))
    assert None not in membership, "a message was left out of every topic"
    assert set(membership) == set(topics), (
        "a message points at a missing topic, or a topic is empty"
    )
    assert {i: t["message_count"] for i, t in topics.items()} == dict(membership)
    assert deps.vectors.count("topics", user_id) == len(topics)


async def assert_nothing_lost(deps: Deps, user_id: int, sent: list[NewMessage]) -> None:
    """All stored, archived once, and archiving again (healthy models or none) changes nothing."""
    assert_all_stored(deps, user_id, sent)
    assert_archived_once(deps, user_id)
    before = topic_snapshot(deps, user_id)
    assert await archive_user(with_models(deps), user_id, archive_all=True) == []
    assert topic_snapshot(deps, user_id) == before, "a second run created or changed topics"


# -- the memory graph -------------------------------------------------------------------


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_splitter_takes_the_segment_edge_and_loses_nothing(
    make_deps: Callable[..., Deps],
    server: ScriptedOpenAI,
    fault: Fault,
    caplog: pytest.LogCaptureFixture,
):
    deps = make_deps(models={"splitter": chat_model(server)})
    sent = told_twice()
    deps.indexer.store_messages(USER, sent)
    server.script(*[fault.step] * ENOUGH)

    results = await archive_user(deps, USER, archive_all=True)

    assert len(server.chat_requests) == len(results) == 2
    assert [result["split_by"] for result in results] == ["embeddings", "embeddings"]
    assert [result["split_fallback"] for result in results] == [fault.reason] * 2
    assert_fell_back(caplog, "splitter", fault)
    await assert_nothing_lost(deps, USER, sent)


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_merger_leaves_the_decision_to_the_rule(
    make_deps: Callable[..., Deps],
    server: ScriptedOpenAI,
    fault: Fault,
    caplog: pytest.LogCaptureFixture,
):
    deps = make_deps(models={"merger": chat_model(server)})
    sent = told_twice()
    deps.indexer.store_messages(USER, sent)
    server.script(*[fault.step] * ENOUGH)

    first, second = await archive_user(deps, USER, archive_all=True)

    assert len(server.chat_requests) == 1
    assert first["merges"] == []
    [merge] = second["merges"]
    assert (merge["decided_by"], second["merge_fallback"]) == ("rule", fault.reason)
    assert merge["reason"].startswith("similarity ")
    assert_fell_back(caplog, "merger", fault)
    assert len(deps.store.topics.all_of(USER)) == 1
    await assert_nothing_lost(deps, USER, sent)


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_archivist_fails_its_facts_and_the_topics_are_retried_next_run(
    make_deps: Callable[..., Deps],
    server: ScriptedOpenAI,
    fault: Fault,
    caplog: pytest.LogCaptureFixture,
):
    deps = make_deps(models={"archivist": chat_model(server)})
    sent = told_twice()
    deps.indexer.store_messages(USER, sent)
    server.script(*[fault.step] * ENOUGH)

    results = await archive_user(deps, USER, archive_all=True)

    facts = results[-1]["facts"]
    assert (facts["status"], facts["reason"], facts["waiting"]) == ("failed", fault.reason, 1)
    assert_fell_back(caplog, "archivist", fault)
    assert deps.store.facts.all_of(USER) == []
    assert deps.store.topics.without_facts(USER, 10) == deps.store.topics.all_of(USER)
    assert_all_stored(deps, USER, sent)
    assert_archived_once(deps, USER)

    # The next run (a later conversation makes a chunk) asks a healthy archivist again
    # about the topics it failed on.
    server.clear_script()
    fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
    server.script(*[reply(json.dumps({"facts": [fact]}))] * ENOUGH)
    later = new_messages(["Marzipan drinks from the fountain now."], prefix="c", start=NOW_DT)
    deps.indexer.store_messages(USER, later)
    [rerun] = await archive_user(deps, USER, archive_all=True)

    assert rerun["facts"]["status"] == "done"
    assert set(topic_snapshot(deps, USER)) <= set(rerun["facts"]["topics"])
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    assert deps.store.topics.without_facts(USER, 10) == []
    await assert_nothing_lost(deps, USER, sent + later)


async def test_topics_whose_facts_failed_are_retried_by_the_next_run_without_new_messages(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """The archivist was down when the conversation was archived; it is back at the next
    run. Nothing new was said, so no chunk is ready, yet the topics it failed on are still
    waiting for their facts: the next run has to ask again. (The bot's worker only runs
    users with a ready chunk, so today a user who stops talking never gets them.)"""
    deps = make_deps(models={"archivist": chat_model(server)})
    sent = told_twice()
    deps.indexer.store_messages(USER, sent)
    server.script(*[http_error(500, "upstream exploded")] * ENOUGH)
    results = await archive_user(deps, USER, archive_all=True)
    assert results[-1]["facts"]["status"] == "failed"

    server.clear_script()
    fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
    server.script(*[reply(json.dumps({"facts": [fact]}))] * ENOUGH)
    await archive_user(deps, USER, archive_all=True)

    assert deps.store.topics.without_facts(USER, 10) == []
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    await assert_nothing_lost(deps, USER, sent)


async def test_rate_limits_are_waited_out_and_the_agents_answers_used(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """429 with Retry-After, then an answer: with one client retry, every agent's own answer
    is used and no fallback is taken."""
    splitter_server, merger_server, archivist_server = server, ScriptedOpenAI(), ScriptedOpenAI()
    async with merger_server, archivist_server:
        deps = make_deps(
            models={
                "splitter": chat_model(splitter_server, max_retries=1),
                "merger": chat_model(merger_server, max_retries=1),
                "archivist": chat_model(archivist_server, max_retries=1),
            }
        )
        sent = told_twice()
        rows = deps.indexer.store_messages(USER, sent)
        limited = http_error(429, "slow down", retry_after=0.2)
        for chunk in (rows[:6], rows[6:]):
            topic = {"summary": "Marzipan's renal diet", "start_msg_id": chunk[0]["id"]}
            topic["end_msg_id"] = chunk[-1]["id"]
            splitter_server.script(limited, reply(json.dumps({"topics": [topic]})))
        merger_server.script(
            limited,
            reply(json.dumps({"should_merge": True, "reason": "one story", "merged_summary": "M"})),
        )
        fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
        archivist_server.script(*[limited, reply(json.dumps({"facts": [fact]}))] * 2)
        started = asyncio.get_running_loop().time()

        first, second = await archive_user(deps, USER, archive_all=True)

        waited = asyncio.get_running_loop().time() - started
        assert [r["split_by"] for r in (first, second)] == ["llm", "llm"]
        assert [r["facts"]["status"] for r in (first, second)] == ["done", "done"]
        [merge] = second["merges"]
        assert (merge["decided_by"], merge["reason"]) == ("llm", "one story")
        assert [topic["summary"] for topic in deps.store.topics.all_of(USER)] == ["M"]
        assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
        for scripted, calls in ((splitter_server, 4), (merger_server, 2), (archivist_server, 4)):
            assert len(scripted.chat_requests) == calls and not scripted.pending
        assert waited >= 5 * 0.2, "a retry came before its Retry-After"
        await assert_nothing_lost(deps, USER, sent)


async def test_hallucinated_ids_from_the_splitter_and_archivist_are_contained(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """Topic bounds outside the chunk are clamped and the gaps covered; fact and person ids
    that do not exist or are another user's are refused, and the other user's memory is
    unchanged."""
    deps = make_deps()
    theirs = deps.store.facts.add(OTHER_USER, f"Remembers that {OTHER_SECRET}", "context", 80)
    their_person = deps.store.people.add(OTHER_USER, "Ottoline Vashchenko", bio="keeps the vault")
    deps = with_models(deps, splitter=chat_model(server), archivist=chat_model(server))
    sent = new_messages(CAT_TALK + POSTGRES_TALK, start=FIRST_DAY)
    rows = deps.indexer.store_messages(USER, sent)
    ghost = 10**7
    server.script(
        reply(
            json.dumps(
                {
                    "topics": [
                        {
                            "summary": "Marzipan's kidneys",
                            "start_msg_id": -5,
                            "end_msg_id": rows[3]["id"],
                        },
                        {"summary": "Ghost", "start_msg_id": ghost, "end_msg_id": ghost + 9},
                        {"summary": "Postgres", "start_msg_id": rows[8]["id"], "end_msg_id": ghost},
                    ],
                    "stragglers": [ghost + 1],
                }
            )
        ),
        *[
            reply(
                json.dumps(
                    {
                        "facts": [
                            {"action": "update", "id": theirs["id"], "content": "Hijacked"},
                            {"action": "delete", "id": theirs["id"]},
                            {"action": "delete", "id": ghost},
                            {"action": "add", "content": "Has a cat named Marzipan"},
                        ],
                        "people": [
                            {"action": "update", "id": their_person["id"], "bio": "Hijacked"},
                            {"action": "merge", "id": their_person["id"], "merge_into": ghost},
                        ],
                    }
                )
            )
        ]
        * ENOUGH,
    )

    [result] = await archive_user(deps, USER, archive_all=True)

    assert (result["split_by"], result["split_fallback"]) == ("llm", None)
    assert result["facts"]["status"] == "done"
    assert (result["facts"]["updated"], result["facts"]["deleted"]) == (0, 0)
    assert deps.store.facts.get(OTHER_USER, theirs["id"]) == theirs
    assert deps.store.people.all_of(OTHER_USER) == [their_person]
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    assert deps.store.people.all_of(USER) == []
    summaries = [summary for summary, _ in topic_snapshot(deps, USER).values()]
    assert "Ghost" not in summaries and "Marzipan's kidneys" in summaries
    await assert_nothing_lost(deps, USER, sent)


# -- the response path ---------------------------------------------------------------------


@dataclass
class World:
    deps: Deps
    history: list[NewMessage]
    topics: dict[int, tuple[str, list[str]]]
    cat_topic: int
    other_topic: int
    other_fact: dict[str, Any]


async def build_world(deps: Deps) -> World:
    """User 1's cat and Postgres conversations archived (no models); user 2's secret."""
    history = new_messages(CAT_TALK, prefix="cat", start=FIRST_DAY) + new_messages(
        POSTGRES_TALK, prefix="pg", start=THIRD_DAY
    )
    deps.indexer.store_messages(USER, history)
    await archive_user(deps, USER, archive_all=True)
    deps.indexer.store_messages(
        OTHER_USER, new_messages([f"Note that {OTHER_SECRET}.", "Noted."], prefix="o")
    )
    await archive_user(deps, OTHER_USER, archive_all=True)
    other_fact = deps.store.facts.add(OTHER_USER, f"Knows that {OTHER_SECRET}", "context", 70)
    (cat_topic,) = [
        topic["id"] for topic in deps.store.topics.all_of(USER) if "Marzipan" in topic["summary"]
    ]
    (other_topic,) = [topic["id"] for topic in deps.store.topics.all_of(OTHER_USER)]
    return World(deps, history, topic_snapshot(deps, USER), cat_topic, other_topic, other_fact)


@pytest.fixture(scope="module")
def world_template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> World:
    """The world built once; each test gets a copy of its data directory."""
    settings = isolated_settings(tmp_path_factory.mktemp("faults") / "data")
    deps = build_deps(settings, models=ModelRegistry.fixed({}), embedder=embedder)
    try:
        return asyncio.run(build_world(deps))
    finally:
        deps.close()


@pytest.fixture
def world(world_template: World, make_deps: Callable[..., Deps], tmp_path: Path) -> World:
    copy = tmp_path / "world"
    shutil.copytree(world_template.deps.settings.data_dir, copy)
    return dataclasses.replace(world_template, deps=make_deps(data_dir=copy))


async def turn_with_state(
    deps: Deps, text: str, external_id: str = "q-1"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`answer_turn` (the body of `run_turn`) and the final state of its graph run."""
    saver = InMemorySaver()
    graph = compile_response_graph(deps, saver)
    result = await answer_turn(graph, deps, USER, text, now_iso=NOW, external_id=external_id)
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    (thread_id,) = threads
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread_id}})
    return result, snapshot.values


def assert_turn_stored(world: World, text: str, answer: str, external_id: str = "q-1") -> None:
    """The history untouched, then the turn's question and its stored answer; the archive
    unchanged and nothing of the other user touched."""
    stored = world.deps.store.messages.all_of(USER)
    history = len(world.history)
    assert [(m["external_id"], m["content"]) for m in stored[:history]] == [
        (m["external_id"], m["content"]) for m in world.history
    ]
    question, *answers = stored[history:]
    assert (question["external_id"], question["role"], question["content"]) == (
        external_id,
        "user",
        text,
    )
    assert [(m["external_id"], m["role"], m["content"]) for m in answers] == [
        (f"reply-to-{question['id']}", "assistant", answer)
    ]
    assert topic_snapshot(world.deps, USER) == world.topics
    assert world.deps.store.facts.get(OTHER_USER, world.other_fact["id"]) == world.other_fact


def assert_memory_only_answer(state: dict[str, Any], result: dict[str, Any]) -> None:
    assert state["answered_by"] == "memory"
    assert result["answer"].startswith(WORDING["en"].intro)
    assert "renal diet" in result["answer"]
    assert OTHER_SECRET not in result["answer"]


ENRICHER_FAULTS = {
    **{name: (fault.step, fault.reason) for name, fault in PROVIDER_FAULTS.items()},
    "empty_reply": (empty_reply(), "empty_reply"),
}


@pytest.mark.parametrize(("step", "expected"), ENRICHER_FAULTS.values(), ids=ENRICHER_FAULTS.keys())
async def test_a_failing_enricher_searches_with_the_raw_text(
    world: World, server: ScriptedOpenAI, step: Step, expected: str
):
    deps = with_models(world.deps, enricher=chat_model(server))
    server.script(*[step] * ENOUGH)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == 1
    assert (state["enrich_fallback"], state["query"]) == (expected, CAT_QUESTION)
    assert [topic["id"] for topic in result["topics"]][:1] == [world.cat_topic]
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


def reranker_faults(world: World) -> dict[str, tuple[list[Step], str | None, int]]:
    """name → (the provider's replies, the expected fallback, requests made)."""
    load_cat = tool_call("get_topics_content", {"ids": [world.cat_topic]})
    ghost = 10**7
    return {
        **{
            name: ([fault.step], "timeout_before_tool" if name == "timeout" else "api_error", 1)
            for name, fault in PROVIDER_FAULTS.items()
        },
        "empty_reply": ([empty_reply()], "protocol_violation", 1),
        "malformed_json": ([load_cat, raw_content("The cat one, obviously.")], "invalid_json", 2),
        "empty_json": ([load_cat, empty_reply()], "invalid_json", 2),
        "endless_tool_calls": ([load_cat] * ENOUGH, "tool_call_limit", 4),
        "hallucinated_ids": (
            [
                tool_call("get_topics_content", {"ids": [ghost, world.other_topic]}),
                reply(json.dumps({"topics": [{"id": ghost}, {"id": world.other_topic}]})),
            ],
            None,
            2,
        ),
    }


RERANKER_CASES = [
    "http_500",
    "http_429",
    "timeout",
    "dropped_connection",
    "empty_reply",
    "malformed_json",
    "empty_json",
    "endless_tool_calls",
    "hallucinated_ids",
]


@pytest.mark.parametrize("case", RERANKER_CASES)
async def test_a_failing_reranker_falls_back_and_the_turn_is_answered(
    world: World, server: ScriptedOpenAI, case: str
):
    steps, expected, requests = reranker_faults(world)[case]
    deps = with_models(world.deps, reranker=chat_model(server))
    server.script(*steps)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == requests
    assert result["fallback"] == expected
    selected = [topic["id"] for topic in result["topics"]]
    assert set(selected) <= set(world.topics)
    if expected is None:  # the model's own choice, every id of it unknown: nothing selected
        assert selected == [] and state["rerank_dropped_ids"] == 2
        assert OTHER_SECRET not in result["answer"]
    else:
        assert selected[0] == world.cat_topic
        assert_memory_only_answer(state, result)
    wire = json.dumps([request.json_body for request in server.chat_requests])
    assert OTHER_SECRET not in wire
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


def endless_search() -> Step:
    return tool_call("search_history", {"query": "Marzipan kidneys"})


RESPONDER_FAULTS = {
    **{name: ([fault.step], fault.reason, 1) for name, fault in PROVIDER_FAULTS.items()},
    "empty_twice": ([empty_reply(), empty_reply()], "empty_reply", 2),
    # Five tool rounds (max_tool_iterations), then the synthesis turn, which has no tools
    # and gets a tool call again: empty twice, so the memory-only answer.
    "endless_tool_calls": ([endless_search()] * ENOUGH, "empty_reply", 7),
}


@pytest.mark.parametrize(
    ("steps", "expected", "requests"), RESPONDER_FAULTS.values(), ids=RESPONDER_FAULTS.keys()
)
async def test_a_failing_responder_gives_the_memory_only_answer(
    world: World, server: ScriptedOpenAI, steps: list[Step], expected: str, requests: int
):
    deps = with_models(world.deps, responder=chat_model(server))
    server.script(*steps)

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert len(server.chat_requests) == requests
    assert state["respond_fallback"] == expected
    if expected in ("api_error", "timeout"):
        assert state["respond_error"].split(":")[0] in {
            fault.error for fault in PROVIDER_FAULTS.values()
        }
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_hallucinated_ids_and_bad_arguments_in_the_responders_tool_calls_are_refused(
    world: World, server: ScriptedOpenAI
):
    """Each refusal comes back to the model as a tool result it can read; the turn goes on."""
    ghost = 10**7
    deps = with_models(world.deps, responder=chat_model(server))
    server.script(
        tool_call("get_topics_content", {"ids": [ghost, world.other_topic]}),
        tool_call("manage_memory", {"action": "delete", "fact_id": ghost}),
        tool_call(
            "manage_memory",
            {"action": "update", "fact_id": world.other_fact["id"], "content": "Hijacked"},
        ),
        tool_call("manage_memory", {"action": "explode", "fact_id": "not a number"}),
        reply("I could not find or change any of that."),
    )

    result, state = await turn_with_state(deps, CAT_QUESTION)

    results = [
        m["content"] for m in server.chat_requests[-1].json_body["messages"] if m["role"] == "tool"
    ]
    assert len(results) == 4 and state["tool_rounds"] == 4
    assert results[0] == "No content is available for the requested topic IDs."
    assert all("manage_memory refused" in text for text in results[1:3])
    assert "action" in results[3] and "fact_id" in results[3]
    assert OTHER_SECRET not in json.dumps([r.json_body for r in server.chat_requests])
    assert (state["answered_by"], result["answer"]) == (
        "responder",
        "I could not find or change any of that.",
    )
    assert world.deps.store.facts.all_of(USER) == []
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_a_rate_limited_responder_is_retried_after_retry_after(
    world: World, server: ScriptedOpenAI
):
    deps = with_models(world.deps, responder=chat_model(server, max_retries=1))
    server.script(http_error(429, "slow down", retry_after=0.3), reply("Renal diet, he said."))
    started = asyncio.get_running_loop().time()

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert asyncio.get_running_loop().time() - started >= 0.3
    assert len(server.chat_requests) == 2
    assert (state["answered_by"], result["answer"]) == ("responder", "Renal diet, he said.")
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_every_agent_failing_at_once_still_answers_from_memory(
    world: World, server: ScriptedOpenAI
):
    model = chat_model(server)
    deps = with_models(world.deps, enricher=model, reranker=model, responder=model)
    server.script(http_error(500), drop_connection(), delay(5.0))

    result, state = await turn_with_state(deps, CAT_QUESTION)

    assert (state["enrich_fallback"], result["fallback"], state["respond_fallback"]) == (
        "api_error",
        "api_error",
        "timeout",
    )
    assert result["llm_calls"] == 3
    assert_memory_only_answer(state, result)
    assert_turn_stored(world, CAT_QUESTION, result["answer"])


async def test_a_turn_that_fails_keeps_the_users_message(
    world: World, monkeypatch: pytest.MonkeyPatch
):
    """The vector store goes away after the message is stored: the turn fails with a clear
    error (after the search node's retries), the message stays, no answer is stored, and
    the next turn, once it is back, answers."""
    working_query = world.deps.vectors.query

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise VectorStoreUnavailable("vector store unavailable: connection refused")

    monkeypatch.setattr(world.deps.vectors, "query", unavailable)
    with pytest.raises(VectorStoreUnavailable):
        await run_turn(world.deps, USER, CAT_QUESTION, now_iso=NOW, external_id="q-1")
    stored = world.deps.store.messages.all_of(USER)
    assert [(m["external_id"], m["content"]) for m in stored[len(world.history) :]] == [
        ("q-1", CAT_QUESTION)
    ]

    monkeypatch.setattr(world.deps.vectors, "query", working_query)
    again = await run_turn(world.deps, USER, CAT_QUESTION, now_iso=NOW, external_id="q-1")
    assert "renal diet" in again["answer"]
    assert_turn_stored(world, CAT_QUESTION, again["answer"])


# -- through the bot -------------------------------------------------------------------------

ALICE = FakeUser(101, "Alice", "en")


async def test_the_bot_answers_through_a_failing_model_and_a_telegram_5xx(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """The responder is down and Telegram answers sendMessage with 502 once: the user gets
    the memory-only answer (the send retried), and the question and answer are stored."""
    server.script(*[http_error(500, "provider down")] * ENOUGH)
    async with running_bot(
        make_deps, [ALICE], models={"responder": chat_model(server)}, turn_wait_s=0.1
    ) as running:
        running.deps.indexer.store_messages(ALICE.id, new_messages(CAT_TALK, prefix="cat"))
        await archive_user(running.deps, ALICE.id, archive_all=True)
        running.api.fail_next("sendMessage", status=502)
        question = running.api.send_text(ALICE, CAT_QUESTION)

        [answer] = await running.api.wait_for_sent(ALICE.id, 1)

        assert [call.status for call in running.api.calls_of("sendMessage", ok_only=False)] == [
            502,
            200,
        ]
        assert answer.params["reply_parameters"]["message_id"] == question["message_id"]
        assert answer.result["text"].startswith(WORDING["en"].intro)
        stored = running.deps.store.messages.all_of(ALICE.id)[len(CAT_TALK) :]
        assert [(m["role"], m["content"]) for m in stored] == [
            ("user", CAT_QUESTION),
            ("assistant", running.turns[0].result["answer"]),
        ]


async def test_the_bot_says_so_when_a_turn_fails_and_keeps_the_message(
    make_deps: Callable[..., Deps], monkeypatch: pytest.MonkeyPatch
):
    async with running_bot(make_deps, [ALICE], turn_wait_s=0.1) as running:

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise VectorStoreUnavailable("vector store unavailable: connection refused")

        monkeypatch.setattr(running.deps.vectors, "query", unavailable)
        question = running.api.send_text(ALICE, CAT_QUESTION)

        [answer] = await running.api.wait_for_sent(ALICE.id, 1)

        assert answer.result["text"] == ENGLISH.turn_failed
        assert answer.params["reply_parameters"]["message_id"] == question["message_id"]
        stored = running.deps.store.messages.all_of(ALICE.id)
        assert [(m["external_id"], m["content"]) for m in stored] == [
            (f"tg-{ALICE.id}-{question['message_id']}", CAT_QUESTION)
        ]
