"""The response graph over real SQLite + Chroma: nodes alone and whole turns, with the real
`ChatOpenAI` against the scripted OpenAI-compatible server.

User 1 and user 2 have archived conversations on the same subjects (a Postgres upgrade,
a sick cat) with different details; user 2's hold a secret that must never reach user 1.
The topology, the routers and the pure helpers: tests/unit/test_response_routing.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
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
from prompts import responder as responder_prompt
from stores.embedders import Embedder
from tests.support.found import found
from tests.support.messages import new_messages
from tests.support.models import recording_model
from tests.support.openai_server import ScriptedOpenAI, empty_reply, http_error, reply, tool_call
from tests.support.services import local_deps
from tests.support.worlds import (
    OTHER_USER,
    RESPONSE_SECRET,
    USER,
    ResponseWorld,
    build_response_world,
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


@pytest_asyncio.fixture
async def llm_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> ResponseWorld:
    """The responder on the scripted server; enricher and reranker take their non-LLM paths."""
    return await build_response_world(make_deps(models={"responder": server.chat_model()}))


async def run_graph(world: ResponseWorld, text: str, **context: Any) -> ResponseState:
    """Store `text` as user 1's message and run one turn on it."""
    (row,) = world.deps.indexer.store_messages(
        USER,
        [NewMessage(external_id=f"q-{text[:20]}", role="user", content=text, created_at=NOW)],
    )
    graph = build_response_graph(world.deps).compile()
    return await graph.ainvoke(
        {"text": text, "message_id": row["id"]},
        context=ResponseContext(user_id=USER, now_iso=NOW, **context),
    )


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
    assert "> You (" in answer


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
