"""The response graph over real SQLite + Chroma: nodes alone and whole turns, with the real
`ChatOpenAI` against the scripted OpenAI-compatible server.

User 1 and user 2 have archived conversations on the same subjects (a Postgres upgrade,
a sick cat) with different details; user 2's hold a secret that must never reach user 1.
The topology, the routers and the pure helpers: tests/unit/test_response_routing.py.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage
from core.state import NO_CONTEXT, ContextUsed, ResponseState, SelectedTopic, UsedFact, UsedTopic
from graphs.response import build_response_graph
from nodes.response.enrich import make_enrich
from nodes.response.finalize import make_finalize
from nodes.response.offline_answer import QUOTE_BUDGET_CHARS, WORDING, make_offline_answer
from nodes.response.search import topic_candidates
from stores.embedders import Embedder
from tests.support.found import found
from tests.support.messages import new_messages
from tests.support.models import recording_model
from tests.support.openai_server import ScriptedOpenAI, http_error
from tests.support.services import local_deps
from tests.support.worlds import (
    RESPONSE_SECRET,
    USER,
    ResponseWorld,
    build_response_world,
    run_response_turn,
)

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> AsyncIterator[ResponseWorld]:
    """No chat models at all: the non-LLM path end to end. Shared by the module's tests,
    which only add turns to user 1's conversation."""
    deps = local_deps(tmp_path_factory.mktemp("response") / "data", embedder)
    yield await build_response_world(deps)
    deps.close()


async def run_graph(world: ResponseWorld, text: str, **context: Any) -> ResponseState:
    """Store `text` as user 1's message and run one turn on it, at `NOW`."""
    return await run_response_turn(world, text, NOW, **context)


def runtime(**context: Any) -> Runtime[ResponseContext]:
    return Runtime(context=ResponseContext(user_id=USER, now_iso=NOW, **context))


# -- enrich --------------------------------------------------------------------------------


async def test_enrich_shows_the_date_recent_messages_and_the_dont_guess_rule(
    make_deps: Callable[..., Deps],
):
    model = recording_model("мениск колено физиотерапевт")
    deps = make_deps(models={"enricher": model})
    rows = deps.indexer.store_messages(
        USER, new_messages([f"earlier message {i}" for i in range(7)] + ["А что с ним?"])
    )
    command = await make_enrich(deps)(
        ResponseState(text="А что с ним?", message_id=rows[-1]["id"]), runtime()
    )
    assert (command.goto, command.update) == (
        "search",
        {"query": "мениск колено физиотерапевт", "enrich_fallback": None},
    )
    system, user = (message.text for message in model.prompts[0])
    assert "DO NOT GUESS" in system and "MinIO" in system
    assert "<date>2026-03-20 10:00 (Friday)</date>" in user
    assert [f"earlier message {i}" in user for i in range(7)] == [False, False] + [True] * 5
    assert user.count("А что с ним?") == 1  # the current message only once, as current


async def test_enrich_falls_back_to_the_raw_text_when_the_model_fails(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    server.script(http_error(500))
    deps = make_deps(models={"enricher": server.chat_model()})
    command = await make_enrich(deps)(ResponseState(text="Postgres error?"), runtime())
    assert (command.goto, command.update) == ("raw_query", {"enrich_fallback": "api_error"})


# -- search -------------------------------------------------------------------------------


async def test_search_never_returns_another_users_topics_or_facts(world: ResponseWorld):
    # The relevance floor off: the search returns user 1's nearest topics however unrelated,
    # so the check is not vacuous for a query only user 2's memory holds.
    context = ResponseContext(user_id=USER, relevance_floor=False)
    for query in ("Postgres 16 upgrade dump restore minutes", RESPONSE_SECRET, "secret project"):
        candidates = topic_candidates(world.deps, context, [query])
        assert candidates, query
        assert {c["id"] for c in candidates} <= world.user_topics
    # With the floor on, user 1's memory holds nothing on user 2's secret project.
    assert topic_candidates(world.deps, ResponseContext(user_id=USER), ["secret project"]) == []
    graph = build_response_graph(world.deps).compile()
    state = await graph.ainvoke(
        {"text": f"How long: {RESPONSE_SECRET}? secret project?"},
        context=ResponseContext(user_id=USER, now_iso=NOW),
    )
    assert {c["id"] for c in state["found"]["topics"]} <= world.user_topics
    assert world.other_fact not in {f["id"] for f in state["found"]["facts"]}
    assert "97 minutes" not in state["answer"]
    assert "secret project" not in state["answer"].lower()
    # Run with the text alone (as Studio runs it), the graph stored the question as user 1's
    # own message; a new segment keeps it out of the conversation later tests quote.
    assert world.deps.store.messages.by_ids(USER, [state["message_id"]])[0]["content"] == (
        f"How long: {RESPONSE_SECRET}? secret project?"
    )
    world.deps.store.sessions.start_new_segment(USER)


async def test_search_finds_a_russian_conversation_from_an_english_question(world: ResponseWorld):
    candidates = topic_candidates(
        world.deps, ResponseContext(user_id=USER), ["What did the vet diagnose my cat with?"]
    )
    cat_topic = world.deps.store.messages.by_ids(USER, [7])[0]["topic_id"]
    assert candidates[0]["id"] == cat_topic
    assert candidates[0]["score"] > candidates[-1]["score"]


# -- the memory-only answer ------------------------------------------------------------------


async def test_without_any_model_the_answer_quotes_the_recalled_topic(world: ResponseWorld):
    state = await run_graph(world, "What did the vet say about my cat?")
    assert state["answered_by"] == "memory"
    assert state["respond_fallback"] == "no_model"
    assert state["rerank_fallback"] == "no_model"
    answer = state["answer"]
    assert answer.startswith(WORDING["en"].intro)
    assert "**2026-03-02**" in answer
    assert "хроническая болезнь почек, вторая стадия" in answer
    # Under the topic's date a quote gives its time alone (the date is the header's).
    quotes = [line for line in answer.splitlines() if line.startswith("> ")]
    assert quotes and all(re.match(r"> (You|Topica) \(\d\d:\d\d\): ", line) for line in quotes)


async def test_the_memory_only_answer_names_the_topics_it_quotes_as_its_sources(
    world: ResponseWorld,
):
    state = await run_graph(
        world, "How long did the Postgres restore take on staging?", rerank_max_topics=1
    )
    assert state["answered_by"] == "memory"
    candidates = [candidate["id"] for candidate in state["found"]["topics"]]
    assert len(candidates) > 1  # the context holds them all (no model reads it here)
    used = state["context_used"]["topics"]
    assert used, "it quotes a topic"
    summaries = {
        topic["id"]: topic["summary"]
        for topic in world.deps.store.topics.by_ids(USER, [topic["id"] for topic in used])
    }
    answer = state["answer"]
    assert all(" ".join(summaries[topic["id"]].split())[:40] in answer for topic in used)
    assert answer.count("\n**") == len(used), "one dated block a quoted topic"


async def test_the_memory_only_answer_speaks_russian_to_a_russian_question(world: ResponseWorld):
    # The relevance floor on: this cross-lingual question's best scores (message cosine
    # 0.33, topic 0.15) clear the floors of a memory this small, not the fixed ones of
    # large memories (0.374, 0.21) that turned it away.
    state = await run_graph(world, "Сколько заняли дамп и восстановление на стейджинге?")
    assert state["answer"].startswith(WORDING["ru"].intro)
    assert "dump and restore took 14 minutes" in state["answer"]
    assert RESPONSE_SECRET not in state["answer"]


async def test_the_memory_only_answer_says_when_nothing_was_recalled(deps: Deps):
    update = await make_offline_answer(deps)(
        ResponseState(text="Do you remember my dog?", selected_topics=[]), runtime()
    )
    assert update == {
        "answer": WORDING["en"].nothing,
        "answered_by": "memory",
        "context_used": NO_CONTEXT,  # it quotes nothing: no sources
    }


async def test_the_memory_only_answer_quotes_the_conversation_going_on(deps: Deps):
    passport = "My passport expires on 12 May 2027 and the renewal costs 70 euros."
    deps.indexer.store_messages(
        USER, new_messages([passport, "Noted, May 2027.", "Thanks a lot, see you later!"])
    )
    graph = build_response_graph(deps).compile()
    state = await graph.ainvoke(
        {"text": "When does my passport expire?"},
        context=ResponseContext(user_id=USER, now_iso=NOW),
    )
    answer = state["answer"]
    assert answer.startswith(WORDING["en"].intro)
    conversation = answer[answer.index(WORDING["en"].conversation) :]
    assert f"> You (2026-03-02 09:00): {passport}" in conversation
    assert "Thanks a lot" not in answer


async def test_the_memory_only_answer_quotes_what_the_context_ranks_first(deps: Deps):
    """A long topic whose answer sits in its middle, and two more topics: the quotes are
    the full-text hit and the messages beside it, within the quotes' budget, not the
    topics' opening lines; the topics come in the order of their best quote."""
    filler = [
        f"Line {i} about the garden shed: " + "the paint, the fence posts and the roof. " * 5
        for i in range(40)
    ]  # about 240 characters each: the quotes' budget holds six or so
    filler[20] = "The plumber said the boiler pressure must stay at 1.5 bar."
    filler[21] = "Got it, I will check the boiler gauge every Sunday."
    rows = deps.indexer.store_messages(USER, new_messages(filler))
    (shed,) = deps.store.topics.save(USER, [("Garden shed", [row["id"] for row in rows])])
    others = []
    for name in ("chess", "bread"):
        more = deps.indexer.store_messages(
            USER, new_messages([f"We talked about {name} today.", "Nice."], prefix=name)
        )
        others += deps.store.topics.save(USER, [(name, [row["id"] for row in more])])
    picks = [
        SelectedTopic(id=topic["id"], reason="r", excerpt=None, score=1.0 - index / 10)
        for index, topic in enumerate([*others, shed])
    ]
    update = await make_offline_answer(deps)(
        ResponseState(
            text="What pressure should the boiler keep?",
            query="boiler pressure",
            found=found(
                queries=["What pressure should the boiler keep?", "boiler pressure"],
                evidence={"text_hits": [[rows[20]["id"]]], "vector_hits": [], "dated": []},
            ),
            selected_topics=picks,
        ),
        runtime(),
    )
    answer = update["answer"]
    quotes = [line for line in answer.splitlines() if line.startswith("> ")]
    assert "boiler pressure must stay at 1.5 bar" in answer
    assert "check the boiler gauge" in answer  # the reply right after the hit
    assert "Line 0 about" not in answer  # not the topic's opening lines
    assert sum(len(line.split("): ", 1)[1]) for line in quotes) <= QUOTE_BUDGET_CHARS
    used = update["context_used"]["topics"]
    assert used[0]["id"] == shed["id"] and used[0]["cut"] is True
    assert answer.index("Garden shed") < answer.index("chess")


# -- finalize -----------------------------------------------------------------------------


async def test_finalize_stores_the_sanitised_answer_once(deps: Deps):
    (question,) = deps.indexer.store_messages(
        USER, [NewMessage(external_id="q1", role="user", content="Hi", created_at=NOW)]
    )
    state = ResponseState(
        text="Hi", message_id=question["id"], answer="Hello!</s>", answered_by="responder"
    )
    finalize = make_finalize(deps)
    update = await finalize(state, runtime())
    again = await finalize(state, runtime())  # a resumed run stores nothing twice
    stored = deps.store.messages.all_of(USER)
    assert (
        update
        == again
        == {
            "answer": "Hello!",
            "sanitized": ["artefact </s>"],
            "answer_message_id": stored[1]["id"],
        }
    )
    assert [(m["role"], m["content"], m["external_id"]) for m in stored] == [
        ("user", "Hi", "q1"),
        ("assistant", "Hello!", f"reply-to-{question['id']}"),
    ]
    assert stored[1]["kind"] == "conversation"
    # A model's answer is conversation: queued for the index like the question.
    assert deps.store.vector_queue.pending(USER, "messages") == [stored[1]["id"]]
    assert deps.indexer.catch_up(USER, ())
    assert deps.vectors.count("messages", USER) == 2
    [answer] = deps.store.answers.all_of(USER)
    assert (answer["message_id"], answer["partial"]) == (stored[1]["id"], False)


async def test_finalize_keeps_the_sources_the_tools_and_the_fallbacks(deps: Deps):
    (question,) = deps.indexer.store_messages(
        USER, [NewMessage(external_id="q2", role="user", content="Hi", created_at=NOW)]
    )
    used = ContextUsed(
        topics=[UsedTopic(id=7, reason="the vet", excerpt=None, score=0.5, cut=True)],
        people=[],
        facts=[UsedFact(id=3, core=True)],
        earlier_messages=[question["id"]],
        session_summary=False,
    )
    call = {"name": "search_history", "args": {"query": "vet"}, "id": "c1", "type": "tool_call"}
    state = ResponseState(
        text="Hi",
        message_id=question["id"],
        answer="The vet said rest.",
        answered_by="synthesis",
        answer_partial=True,
        context_used=used,
        messages=[AIMessage("", tool_calls=[call])],
        rerank_fallback="no_model",
        enrich_fallback=None,
    )

    update = await make_finalize(deps)(state, runtime())

    answer = deps.store.answers.get(USER, update["answer_message_id"])
    assert answer is not None
    assert (answer["answered_by"], answer["partial"]) == ("synthesis", True)
    assert answer["context_used"] == {
        **used,
        "tools": [{"name": "search_history", "args": {"query": "vet"}}],
        "fallbacks": {"reranker": "no_model"},
    }


async def test_finalize_stores_nothing_for_an_answer_stopped_before_its_first_word(deps: Deps):
    (question,) = deps.indexer.store_messages(
        USER, [NewMessage(external_id="q3", role="user", content="Hi", created_at=NOW)]
    )
    state = ResponseState(text="Hi", message_id=question["id"], answer="", answer_partial=True)

    update = await make_finalize(deps)(state, runtime())

    assert update == {"answer": "", "sanitized": [], "answer_message_id": None}
    assert [m["role"] for m in deps.store.messages.all_of(USER)] == ["user"]
    assert deps.store.answers.all_of(USER) == []
