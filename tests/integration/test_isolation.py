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
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.memory import archive_user
from app.turns import answer_turn, compile_response_graph
from app.views import export_user
from cli.main import main
from core.context import ResponseContext
from core.deps import Deps
from core.found import PersonCandidate, TopicCandidate
from core.records import NewMessage, Role, TopicRow
from graphs.reranker import build_reranker_graph
from nodes.response.topic_content import topic_date
from stores.embedders import Embedder
from tests.support.found import found
from tests.support.messages import BASE_TIME
from tests.support.models import with_models
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call, tool_calls
from tests.support.services import local_deps

NOW = "2026-04-01T10:00:00+00:00"
STEP = timedelta(minutes=2)
PAUSE = timedelta(hours=3)
"""Longer than the chunk interval: the next message starts a new chunk of its user."""


@dataclass(frozen=True)
class Persona:
    user_id: int
    secret: str
    person: str
    fact: str

    def external_id(self, number: int) -> str:
        return f"x{self.user_id}q{number}z"


PERSONAS = (
    Persona(1101, "quokkazephyr", "Ottoline Vashchenko", "Named the family boat Quokkazephyr"),
    Persona(2202, "marmotblizzard", "Bartholomew Quist", "Named the family boat Marmotblizzard"),
    Persona(3303, "okapitundra", "Perpetua Lindqvist", "Named the family boat Okapitundra"),
    Persona(4404, "ibexsolstice", "Casimir Oyelaran", "Named the family boat Ibexsolstice"),
)
TEMPLATES = (
    "We are upgrading Postgres from 14 to 16 and the staging database is called {secret}.",
    "{person} says the pg_dumpall restore into the {secret} volume took 14 minutes.",
    "Planning a ski trip to Zermatt in February; the chalet booking code is {secret}.",
    "{person} will join the Zermatt ski trip, the pass costs 92 francs a day.",
    "Our cat stopped eating and drinks a lot, the vet file is labelled {secret}.",
    "The vet diagnosed kidney disease in our cat; {person} recommended a renal diet.",
)
QUESTION = "What did we say about the Postgres upgrade, the Zermatt ski trip and the sick cat?"


@dataclass(frozen=True)
class Said:
    """One message of the interleaved sessions: who, which sentence, and a pause before it."""

    speaker: int
    template: int
    role: Role
    pause_before: bool


@st.composite
def interleaved_sessions(draw: st.DrawFn) -> tuple[tuple[Persona, ...], list[Said]]:
    personas = PERSONAS[: draw(st.integers(3, len(PERSONAS)))]
    sentence = st.integers(0, len(TEMPLATES) - 1)
    first_words = [Said(index, draw(sentence), "user", False) for index in range(len(personas))]
    more = draw(
        st.lists(
            st.builds(
                Said,
                st.integers(0, len(personas) - 1),
                sentence,
                st.sampled_from(["user", "assistant"]),
                st.booleans(),
            ),
            max_size=12,
        )
    )
    return personas, draw(st.permutations(first_words + more))


def conversation(
    personas: Sequence[Persona], said: Sequence[Said]
) -> list[tuple[Persona, NewMessage]]:
    """The messages in arrival order, each with its speaker."""
    counts = dict.fromkeys(range(len(personas)), 0)
    moment = BASE_TIME
    messages = []
    for item in said:
        moment += PAUSE if item.pause_before else STEP
        persona = personas[item.speaker]
        counts[item.speaker] += 1
        text = TEMPLATES[item.template].format(secret=persona.secret, person=persona.person)
        messages.append(
            (
                persona,
                NewMessage(
                    external_id=persona.external_id(counts[item.speaker]),
                    role=item.role,
                    content=text,
                    created_at=moment.isoformat(),
                    author=persona.person if item.role == "user" else "Topica",
                ),
            )
        )
    return messages


# -- what each user owns, and what must never reach them ---------------------------------


@dataclass
class Owned:
    persona: Persona
    messages: list[NewMessage]
    topics: list[TopicRow] = dataclasses.field(default_factory=list)
    fact: dict[str, Any] = dataclasses.field(default_factory=dict)
    person: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def topic_ids(self) -> set[int]:
        return {topic["id"] for topic in self.topics}

    def tokens(self) -> list[str]:
        """What only this user ever said or was told: none of it may reach anyone else."""
        persona = self.persona
        return [
            persona.secret,
            persona.person,
            persona.fact,
            *(message["external_id"] for message in self.messages),
        ]


def assert_no_foreign_material(
    label: str, text: str, user: Owned, everyone: dict[int, Owned]
) -> None:
    folded = text.casefold()
    for other in everyone.values():
        if other is user:
            continue
        for token in other.tokens():
            assert token.casefold() not in folded, (
                f"{label} of user {user.persona.user_id} holds {token!r} "
                f"of user {other.persona.user_id}"
            )
        for topic_id in other.topic_ids:
            for mention in (f"=== Topic {topic_id} ===", f"[ID:{topic_id}]"):
                assert mention not in text, f"{label} of user {user.persona.user_id}: {mention}"


def assert_own_external_ids(label: str, external_ids: Sequence[str], user: Owned) -> None:
    prefix = f"x{user.persona.user_id}q"
    foreign = [
        i for i in external_ids if i.startswith("x") and "q" in i and not i.startswith(prefix)
    ]
    assert not foreign, f"{label} of user {user.persona.user_id} lists {foreign}"


def topic_candidate(topic: TopicRow) -> TopicCandidate:
    return TopicCandidate(
        id=topic["id"],
        summary=topic["summary"],
        date=topic_date(topic),
        message_count=topic["message_count"],
        size_chars=topic["size_chars"],
        score=0.99,
        fused_score=0.99,
        vector_score=0.99,
    )


def facts_of_everyone(deps: Deps, users: dict[int, Owned]) -> dict[int, list[dict[str, Any]]]:
    return {
        user_id: [*deps.store.facts.all_of(user_id), *deps.store.facts.history(user_id)]
        for user_id in users
    }


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
