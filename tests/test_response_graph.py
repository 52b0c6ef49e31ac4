"""The response graph over real SQLite + Chroma: nodes alone, routers, topology, and whole
turns with the real `ChatOpenAI` against the scripted OpenAI-compatible server.

User 1 and user 2 have archived conversations on the same subjects (a Postgres upgrade,
a sick cat) with different details; user 2's hold a secret that must never reach user 1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from pydantic import Field

from app.memory import archive_user
from core.context import ResponseContext
from core.deps import Deps
from core.models import ModelRegistry
from core.records import NewMessage
from core.state import ResponseState, SelectedTopic
from graphs.response import build_response_graph
from nodes.response.enrich import clean_query, make_enrich, raw_query
from nodes.response.finalize import make_finalize, sanitize, strip_runaway_json
from nodes.response.offline_answer import WORDING, language_of, make_offline_answer
from nodes.response.respond import make_respond, reply_command, route_after_tools
from nodes.response.search import rrf_scores, search_queries, topic_candidates
from nodes.response.tools import make_response_tools
from prompts import responder as responder_prompt
from stores.embedders import Embedder
from stores.services import build_deps
from tests.conftest import isolated_settings, new_messages
from tests.support.openai_server import ScriptedOpenAI, empty_reply, http_error, reply, tool_call

pytestmark = pytest.mark.timeout(60)

USER, OTHER_USER = 1, 2
NOW = "2026-03-20T10:00:00+00:00"
SECRET = "restore took 97 minutes"
SITTING_GAP = timedelta(hours=5)

USER_SITTINGS = [
    [
        "We're upgrading Postgres from 14 to 16 in docker compose and the db container "
        "refuses to start after the image change.",
        "The data directory was initialised by PostgreSQL 14, so 16 cannot read it: "
        "dump with pg_dumpall and restore into a fresh volume.",
        "Did it on staging: dump and restore took 14 minutes, all good.",
        "Great, then plan a 30 minute maintenance window for production.",
    ],
    [
        "Марципан третий день почти ничего не ест и очень много пьёт, я переживаю.",
        "Это стоит показать ветеринару, возьмите анализ крови и мочи.",
        "Вернулись от ветеринара: у Марципана хроническая болезнь почек, вторая стадия.",
        "Тогда нужна почечная диета Renal и фонтанчик, чтобы он больше пил.",
    ],
]
OTHER_SITTINGS = [
    [
        "Our Postgres 14 to 16 upgrade in docker compose broke the db container too.",
        "Use pg_dumpall and restore into a new volume; version 16 can't read 14's files.",
        f"On staging the dump and {SECRET}.",
        "Then production needs a two hour window.",
    ],
]


def sittings_messages(sittings: list[list[str]], prefix: str) -> list[NewMessage]:
    contents = [content for sitting in sittings for content in sitting]
    starts = {index * len(sittings[0]): SITTING_GAP for index in range(1, len(sittings))}
    return new_messages(contents, prefix=prefix, gaps=starts, step=timedelta(minutes=3))


@dataclass
class World:
    deps: Deps
    user_topics: set[int]
    other_topics: set[int]
    other_fact: int
    user_fact: int


async def build_world(deps: Deps) -> World:
    for user_id, sittings, prefix in (
        (USER, USER_SITTINGS, "u"),
        (OTHER_USER, OTHER_SITTINGS, "o"),
    ):
        deps.indexer.store_messages(user_id, sittings_messages(sittings, prefix))
        await archive_user(deps, user_id, archive_all=True)
    tools = {tool.name: tool for tool in make_response_tools(deps)}
    assert tools  # the facts below are indexed the way the tool indexes them
    user_fact = deps.store.facts.add(USER, "Lives in Berlin with Ira", "identity", 95)
    other_fact = deps.store.facts.add(OTHER_USER, "Has a secret project", "context", 60)
    for user_id, fact in ((USER, user_fact), (OTHER_USER, other_fact)):
        deps.vectors.upsert(
            "facts", user_id, [fact["id"]], deps.embedder.encode([fact["content"]]), None
        )
    return World(
        deps=deps,
        user_topics={topic["id"] for topic in deps.store.topics.all_of(USER)},
        other_topics={topic["id"] for topic in deps.store.topics.all_of(OTHER_USER)},
        other_fact=other_fact["id"],
        user_fact=user_fact["id"],
    )


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ScriptedOpenAI]:
    async with ScriptedOpenAI() as scripted:
        yield scripted


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> AsyncIterator[World]:
    """No chat models at all: the non-LLM path end to end. Shared by the module's tests,
    which only add turns to user 1's conversation."""
    settings = isolated_settings(tmp_path_factory.mktemp("response") / "data")
    deps = build_deps(settings, models=ModelRegistry.fixed({}), embedder=embedder)
    yield await build_world(deps)
    deps.close()


@pytest_asyncio.fixture
async def llm_world(make_deps: Callable[..., Deps], server: ScriptedOpenAI) -> World:
    """The responder on the scripted server; enricher and reranker take their non-LLM paths."""
    return await build_world(make_deps(models={"responder": server.chat_model()}))


async def run_graph(world: World, text: str, **context: Any) -> ResponseState:
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


class RecordingChatModel(GenericFakeChatModel):
    """Replays scripted replies; records each prompt and the tools bound (seed: langgraph's
    prebuilt tests' fake model)."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        self.bound_tools.append([tool.name for tool in tools])
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def recording_model(*replies: str | AIMessage) -> RecordingChatModel:
    return RecordingChatModel(messages=iter(replies))


# -- topology ---------------------------------------------------------------------------


TEXT_FALLBACK = "no_model / api_error / timeout / empty_reply"


def test_topology_snapshot_keeps_every_edge(deps: Deps):
    mermaid = build_response_graph(deps).compile().get_graph(xray=True).draw_mermaid()
    edges = [
        "__start__ --> enrich;",
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
        "rerank\\3aprepare -. &nbsp;no_model / no_candidates&nbsp; .-> rerank\\3avector_fallback;",
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


def test_search_queries_are_distinct_raw_first():
    assert search_queries("Knee?", "knee?  ") == ["Knee?"]
    assert search_queries("Knee?", "knee physio Frau Keller") == [
        "Knee?",
        "knee physio Frau Keller",
    ]
    assert search_queries("Knee?", None) == ["Knee?"]


async def test_search_never_returns_another_users_topics_or_facts(world: World):
    context = ResponseContext(user_id=USER)
    for query in ("Postgres 16 upgrade dump restore minutes", SECRET, "secret project"):
        candidates = topic_candidates(world.deps, context, [query])
        assert candidates, query
        assert {c["id"] for c in candidates} <= world.user_topics
    graph = build_response_graph(world.deps).compile()
    state = await graph.ainvoke(
        {"text": f"How long: {SECRET}? secret project?"},
        context=ResponseContext(user_id=USER, now_iso=NOW),
    )
    assert {c["id"] for c in state["candidates"]} <= world.user_topics
    assert world.other_fact not in {f["id"] for f in state["fact_candidates"]}
    assert "97 minutes" not in state["answer"]
    assert "secret project" not in state["answer"].lower()


async def test_search_finds_a_russian_conversation_from_an_english_question(world: World):
    candidates = topic_candidates(
        world.deps, ResponseContext(user_id=USER), ["What did the vet diagnose my cat with?"]
    )
    cat_topic = world.deps.store.messages.by_ids(USER, [7])[0]["topic_id"]
    assert candidates[0]["id"] == cat_topic
    assert candidates[0]["score"] > candidates[-1]["score"]


# -- the memory-only answer ------------------------------------------------------------------


async def test_without_any_model_the_answer_quotes_the_recalled_topic(world: World):
    state = await run_graph(world, "What did the vet say about my cat?")
    assert state["answered_by"] == "memory"
    assert state["respond_fallback"] == "no_model"
    assert state["rerank_fallback"] == "no_model"
    answer = state["answer"]
    assert answer.startswith(WORDING["en"].intro)
    assert "**2026-03-02**" in answer
    assert "хроническая болезнь почек, вторая стадия" in answer
    assert "> You (" in answer


async def test_the_memory_only_answer_speaks_russian_to_a_russian_question(world: World):
    state = await run_graph(world, "Сколько заняли дамп и восстановление на стейджинге?")
    assert state["answer"].startswith(WORDING["ru"].intro)
    assert "dump and restore took 14 minutes" in state["answer"]
    assert SECRET not in state["answer"]


async def test_the_memory_only_answer_says_when_nothing_was_recalled(deps: Deps):
    update = await make_offline_answer(deps)(
        ResponseState(text="Do you remember my dog?", selected_topics=[]), runtime()
    )
    assert update == {"answer": WORDING["en"].nothing, "answered_by": "memory"}


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


def test_language_of_the_message():
    assert language_of("Что ты советовал посмотреть в Валенсии?") == "ru"
    assert language_of("What about Project Hail Mary?") == "en"


async def test_the_memory_only_answer_quotes_at_most_three_messages_per_topic(world: World):
    topic_id = next(iter(world.user_topics))
    update = await make_offline_answer(world.deps)(
        ResponseState(
            text="Postgres",
            query="Postgres",
            selected_topics=[SelectedTopic(id=topic_id, reason="r", excerpt=None, score=1.0)],
        ),
        runtime(),
    )
    quotes = [line for line in update["answer"].splitlines() if line.startswith("> ")]
    assert 1 <= len(quotes) <= 3


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


async def test_finalize_stores_the_sanitised_answer_once(deps: Deps):
    (question,) = deps.indexer.store_messages(
        USER, [NewMessage(external_id="q1", role="user", content="Hi", created_at=NOW)]
    )
    state = ResponseState(text="Hi", message_id=question["id"], answer="Hello!</s>")
    finalize = make_finalize(deps)
    update = await finalize(state, runtime())
    await finalize(state, runtime())  # a resumed run stores nothing twice
    assert update == {"answer": "Hello!", "sanitized": ["artefact </s>"]}
    stored = deps.store.messages.all_of(USER)
    assert [(m["role"], m["content"], m["external_id"]) for m in stored] == [
        ("user", "Hi", "q1"),
        ("assistant", "Hello!", f"reply-to-{question['id']}"),
    ]
    assert deps.vectors.count("messages", USER) == 2


# -- the responder through the real ChatOpenAI --------------------------------------------


def request(server: ScriptedOpenAI, index: int) -> dict[str, Any]:
    return server.chat_requests[index].json_body


async def test_a_plain_answer_is_stored_and_the_context_has_its_layers(
    llm_world: World, server: ScriptedOpenAI
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
    ]
    system = body["messages"][0]["content"]
    assert "<date>2026-03-20 10:00 (Friday)</date>" in system
    assert f"- [{llm_world.user_fact}] Lives in Berlin with Ira" in system
    assert "<recalled_topics>" in system and "dump and restore took 14 minutes" in system
    assert SECRET not in system
    assert body["messages"][-1] == {
        "role": "user",
        "content": "How long did the Postgres restore take on staging?",
    }
    assert list(state["context_layers"]) == ["system", "topics", "current"]  # all archived
    assert state["context_tokens"] >= sum(state["context_layers"].values())
    assert llm_world.deps.store.messages.all_of(USER)[-1]["content"] == state["answer"]


async def test_tool_loop_stops_at_the_limit_and_synthesises_without_tools(
    llm_world: World, server: ScriptedOpenAI
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
    assert SECRET not in "".join(tool_results)
    assert state["answered_by"] == "synthesis"
    assert state["tool_rounds"] == 2
    assert state["answer"] == "It took 14 minutes."
    assert not server.unscripted


async def test_an_empty_reply_is_retried_once(llm_world: World, server: ScriptedOpenAI):
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
    llm_world: World, server: ScriptedOpenAI
):
    server.script(empty_reply(), reply("</s>"))
    state = await run_graph(llm_world, "Anything about Postgres?")
    assert len(server.chat_requests) == 2
    assert state["respond_fallback"] == "empty_reply"
    assert state["answered_by"] == "memory"
    assert state["answer"].startswith(WORDING["en"].intro)
    assert "dump and restore took 14 minutes" in state["answer"]


async def test_an_api_error_gives_the_memory_only_answer(llm_world: World, server: ScriptedOpenAI):
    server.script(http_error(500, "provider down"))
    state = await run_graph(llm_world, "Что сказал ветеринар про Марципана?")
    assert state["respond_fallback"] == "api_error"
    assert "Error code: 500 - provider down" in state["respond_error"]
    assert state["answer"].startswith(WORDING["ru"].intro)
    assert "хроническая болезнь почек" in state["answer"]
    assert llm_world.deps.store.messages.all_of(USER)[-1]["content"] == state["answer"]


async def test_manage_memory_refuses_another_users_fact(llm_world: World, server: ScriptedOpenAI):
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
    llm_world: World, server: ScriptedOpenAI
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
    llm_world: World, server: ScriptedOpenAI
):
    other_topic = next(iter(llm_world.other_topics))
    server.script(
        tool_call("get_topics_content", {"ids": [other_topic]}),
        reply("Nothing there."),
    )
    await run_graph(llm_world, "Show me topic content")
    (tool_result,) = [m for m in request(server, 1)["messages"] if m["role"] == "tool"]
    assert SECRET not in tool_result["content"]
    assert "No content is available" in tool_result["content"]


async def test_the_responder_binds_the_three_tools(make_deps: Callable[..., Deps]):
    model = recording_model(AIMessage("Hello there."))
    deps = make_deps(models={"responder": model})
    graph = build_response_graph(deps).compile()
    state = await graph.ainvoke(
        {"text": "Hello"}, context=ResponseContext(user_id=USER, now_iso=NOW)
    )
    assert model.bound_tools == [["search_history", "manage_memory", "get_topics_content"]]
    assert state["answer"] == "Hello there."
    assert isinstance(model.prompts[0][-1], HumanMessage)
    assert not any(isinstance(m, ToolMessage) for m in model.prompts[0])
    assert responder_prompt.NO_PROFILE in model.prompts[0][0].text
