"""Isolation: many users' sessions interleaved, archived, merged and queried; nothing crosses.

Every user has tokens no other user ever says: a secret word, a person, a fact, and the
external ids of their messages. All users talk about the same subjects (a Postgres
upgrade, a ski trip to Zermatt, a sick cat), in the same sentences, so another user's
topics are the nearest neighbours of every question and the best merge partners of every
topic: any read or write that forgot whose memory it serves would find, merge or quote
them. Hypothesis draws how many users there are and how their messages interleave (and
where the long pauses fall, so users have several chunks whose topics get merged);
then every way out is read for every user:

- `answer_turn` (the body of `run_turn`) with no model: the memory-only answer and topics;
- the response graph with a scripted responder that calls `search_history`,
  `get_topics_content` on the other users' topic ids and `manage_memory` update and
  delete on their fact ids, all of which must be refused and leave those facts unchanged;
- the reranker subgraph with the other users' topics and people forged into its
  candidates and named in the model's answer;
- `export_user`, and `topica export` and `topica topics --json` run in-process.

No output may hold another user's secret, person, fact or message id, nor name one of
their topics; every id in a structured output must be the user's own. `/forget` buttons
forged with another user's ids are checked through the bot in
tests/e2e/test_bot_isolation.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings

from app.memory import archive_user
from app.turns import answer_turn, compile_response_graph
from app.views import export_user
from cli.main import main
from core.context import ResponseContext
from core.deps import Deps
from core.found import PersonCandidate
from core.records import NewMessage
from graphs.reranker import build_reranker_graph
from stores.embedders import Embedder
from tests.support.found import found
from tests.support.isolation_world import (
    NOW,
    QUESTION,
    Owned,
    Persona,
    Said,
    assert_no_foreign_material,
    assert_own_external_ids,
    conversation,
    facts_of_everyone,
    interleaved_sessions,
    topic_candidate,
)
from tests.support.models import with_models
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call, tool_calls
from tests.support.services import local_deps

# -- the scenario ------------------------------------------------------------------------


async def archive_everyone(deps: Deps, spoken: list[tuple[Persona, NewMessage]]):
    users = {
        persona.user_id: Owned(persona, [m for p, m in spoken if p is persona])
        for persona, _ in spoken
    }
    for persona, message in spoken:  # one by one, in arrival order, as the bot stores them
        deps.indexer.store_messages(persona.user_id, [message])
    for user in users.values():
        persona = user.persona
        user.fact = deps.store.facts.add(persona.user_id, persona.fact, "identity", 95)
        user.person = deps.store.people.add(
            persona.user_id, persona.person, bio=f"friend who knows about {persona.secret}"
        )
    merges = 0
    for user_id, user in users.items():
        chunks = await archive_user(deps, user_id, archive_all=True)
        merges += sum(len(chunk.get("merges", [])) for chunk in chunks)
        user.topics = deps.store.topics.all_of(user_id)
    return users, merges


def assert_each_user_archived_alone(deps: Deps, users: dict[int, Owned]) -> None:
    for user_id, user in users.items():
        stored = deps.store.messages.all_of(user_id)
        assert [(m["external_id"], m["content"]) for m in stored] == [
            (m["external_id"], m["content"]) for m in user.messages
        ]
        assert {m["topic_id"] for m in stored} == user.topic_ids, "a message left out or shared"
        members = deps.store.messages.external_ids_by_topic(user_id, sorted(user.topic_ids))
        assert_own_external_ids("topic members", [i for ids in members.values() for i in ids], user)
        for topic in user.topics:
            assert_no_foreign_material("topic summary", topic["summary"], user, users)


async def memory_only_turn(deps: Deps, user: Owned, users: dict[int, Owned]) -> list[str]:
    graph = compile_response_graph(deps)
    result = await answer_turn(graph, deps, user.persona.user_id, QUESTION, now_iso=NOW)
    assert {topic["id"] for topic in result["topics"]} <= user.topic_ids
    assert {person["id"] for person in result["people"]} <= {user.person["id"]}
    assert {fact["id"] for fact in result["facts"]} <= {user.fact["id"]}
    for topic in result["topics"]:
        assert_own_external_ids("run_turn topic", topic["message_ids"], user)
    return [json.dumps(result, ensure_ascii=False)]


def tool_results(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The tool messages of a chat request, by the name of the tool that produced them."""
    names = {
        call["id"]: call["function"]["name"]
        for message in messages
        if message["role"] == "assistant"
        for call in message.get("tool_calls") or []
    }
    results: dict[str, list[str]] = {}
    for message in messages:
        if message["role"] == "tool":
            results.setdefault(names[message["tool_call_id"]], []).append(message["content"])
    return results


async def scripted_responder_turn(
    deps: Deps, server: ScriptedOpenAI, user: Owned, users: dict[int, Owned]
) -> list[str]:
    others = [other for other in users.values() if other is not user]
    foreign_topics = sorted(i for other in others for i in other.topic_ids)
    foreign_facts = [other.fact["id"] for other in others]
    server.script(
        tool_calls(
            [
                ("search_history", {"query": "Postgres upgrade Zermatt ski trip cat vet kidney"}),
                ("get_topics_content", {"ids": [*foreign_topics, *sorted(user.topic_ids)]}),
            ]
        ),
        tool_calls(
            [
                *(
                    ("manage_memory", {"action": "update", "fact_id": i, "content": "hijacked"})
                    for i in foreign_facts
                ),
                *(("manage_memory", {"action": "delete", "fact_id": i}) for i in foreign_facts),
            ]
        ),
        reply("That is all I found."),
    )
    before = len(server.chat_requests)
    facts_before = facts_of_everyone(deps, users)
    llm_deps = with_models(deps, responder=server.chat_model(timeout=10))
    graph = compile_response_graph(llm_deps)

    result = await answer_turn(graph, llm_deps, user.persona.user_id, QUESTION, now_iso=NOW)

    requests = [request.json_body for request in server.chat_requests[before:]]
    assert len(requests) == 3 and not server.pending
    assert result["answer"] == "That is all I found."
    results = tool_results(requests[-1]["messages"])
    assert len(results["manage_memory"]) == 2 * len(foreign_facts)
    assert all("manage_memory refused" in text for text in results["manage_memory"])
    [content] = results["get_topics_content"]
    assert all(f"=== Topic {topic_id} ===" in content for topic_id in user.topic_ids)
    assert facts_of_everyone(deps, users) == facts_before
    return [json.dumps(requests, ensure_ascii=False), json.dumps(result, ensure_ascii=False)]


async def forged_rerank(
    deps: Deps, server: ScriptedOpenAI, user: Owned, users: dict[int, Owned]
) -> list[str]:
    others = [other for other in users.values() if other is not user]
    foreign = [topic for other in others for topic in other.topics]
    people = [
        PersonCandidate(id=owner.person["id"], name=owner.person["name"], description="", score=0.9)
        for owner in users.values()
    ]
    everything = [topic["id"] for topic in [*foreign, *user.topics]]
    server.script(
        tool_call("get_topics_content", {"ids": everything}),
        reply(
            json.dumps(
                {
                    "topics": [{"id": i, "reason": "relevant"} for i in everything],
                    "people": [{"id": p["id"], "reason": "named"} for p in people],
                }
            )
        ),
    )
    before = len(server.chat_requests)
    graph = build_reranker_graph(
        with_models(deps, reranker=server.chat_model(timeout=10))
    ).compile()

    result = await graph.ainvoke(
        {
            "query": QUESTION,
            "user_message": QUESTION,
            "found": found(
                topics=[topic_candidate(topic) for topic in [*foreign, *user.topics]],
                people=people,
            ),
        },
        context=ResponseContext(user_id=user.persona.user_id, now_iso=NOW),
    )

    assert result["rerank_fallback"] is None
    selected = [topic["id"] for topic in result["selected_topics"]]
    assert selected and set(selected) <= user.topic_ids
    assert [p["id"] for p in result["selected_people"]] == [user.person["id"]]
    assert result["rerank_dropped_ids"] == len(foreign) + len(others)
    requests = [request.json_body for request in server.chat_requests[before:]]
    return [json.dumps(requests, ensure_ascii=False), json.dumps(result, ensure_ascii=False)]


async def run_everything(
    data_dir: Path, embedder: Embedder, spoken: list[tuple[Persona, NewMessage]]
) -> tuple[dict[int, Owned], dict[int, list[tuple[str, str]]], int]:
    """Store, archive and query: what each user owns, every output they got, and how many
    topics were merged."""
    deps = local_deps(data_dir, embedder)
    try:
        users, merges = await archive_everyone(deps, spoken)
        assert_each_user_archived_alone(deps, users)
        outputs: dict[int, list[tuple[str, str]]] = {user_id: [] for user_id in users}
        async with ScriptedOpenAI() as server:
            for user_id, user in users.items():
                for label, texts in (
                    ("memory-only turn", await memory_only_turn(deps, user, users)),
                    ("responder turn", await scripted_responder_turn(deps, server, user, users)),
                    ("reranker", await forged_rerank(deps, server, user, users)),
                ):
                    outputs[user_id].extend((label, text) for text in texts)
            assert not server.unscripted
        for user_id, user in users.items():
            exported = export_user(deps, user_id)
            assert_own_external_ids(
                "export", [m["external_id"] for m in exported["messages"]], user
            )
            assert {t["id"] for t in exported["topics"]} == user.topic_ids
            outputs[user_id].append(("export_user", json.dumps(exported, ensure_ascii=False)))
        return users, outputs, merges
    finally:
        deps.close()


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, Any]:
    assert main(list(argv)) == 0
    printed = capsys.readouterr().out
    return printed, json.loads(printed)


@pytest.mark.timeout(600)
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sessions=interleaved_sessions())
def test_no_output_ever_holds_another_users_memory(
    sessions: tuple[tuple[Persona, ...], list[Said]],
    tmp_path_factory: pytest.TempPathFactory,
    embedder: Embedder,
    capsys: pytest.CaptureFixture[str],
):
    personas, said = sessions
    spoken = conversation(personas, said)
    data_dir = tmp_path_factory.mktemp("isolation") / "data"

    users, outputs, merges = asyncio.run(run_everything(data_dir, embedder, spoken))
    event(f"{len(users)} users")
    event("topics merged" if merges else "no topic merged")
    event(f"at most {max(len(user.topics) for user in users.values())} topics per user")

    for user_id, user in users.items():
        where = ["--data-dir", str(data_dir), "--user", str(user_id)]
        printed, exported = cli_json(capsys, "export", *where)
        assert exported["user_id"] == user_id
        assert_own_external_ids(
            "topica export", [m["external_id"] for m in exported["messages"]], user
        )
        assert {t["id"] for t in exported["topics"]} == user.topic_ids
        outputs[user_id].append(("topica export", printed))
        printed, topics = cli_json(capsys, "topics", "--json", *where)
        assert {t["id"] for t in topics} == user.topic_ids
        outputs[user_id].append(("topica topics --json", printed))
        for label, text in outputs[user_id]:
            assert_no_foreign_material(label, text, user, users)
