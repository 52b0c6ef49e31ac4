"""Context assembly (seeds 002-004): layers, budgets, the rolling summary, auto-RAG, `/new`.

The conversation is stored unarchived in the current segment, as during a live chat;
`assemble` runs alone on real SQLite + Chroma with the local embedder. The budget
rules alone: tests/unit/test_context_budget.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from core.context import ResponseContext
from core.deps import Deps
from core.found import TopicCandidate
from core.records import NewMessage
from core.state import ResponseState, SelectedTopic
from nodes.response.assemble import make_assemble, recalled_sections, topics_section
from nodes.response.offline_answer import make_offline_answer
from nodes.response.rerank_selection import ShownTopics, fallback_selection
from nodes.response.session_summary import make_extractive_summary, make_summarise
from nodes.shared.budget import tokens
from tests.support.found import found
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI, http_error

pytestmark = pytest.mark.timeout(60)

USER = 1
NOW = "2026-03-02T12:00:00+00:00"
PASSPORT = "My passport expires on 12 May 2027, and the renewal at the Bürgeramt costs 70 euros."
FILLER = [
    "Let's plan the week: gym on Monday and Thursday, groceries on Wednesday evening.",
    "Sounds good, I'll put the gym sessions in your calendar.",
    "Also remind me to call the plumber about the kitchen sink on Tuesday.",
    "Noted, a reminder for the plumber on Tuesday morning.",
    "What should I cook for dinner with chickpeas and spinach?",
    "A chickpea and spinach curry with coconut milk takes thirty minutes.",
    "Nice, and a dessert idea that is not too sweet?",
    "Baked apples with cinnamon and a spoon of yoghurt.",
]
WINDOW = 4


def runtime(**context: Any):
    from langgraph.runtime import Runtime

    values = {"sliding_window_messages": WINDOW, **context}
    return Runtime(context=ResponseContext(user_id=USER, now_iso=NOW, **values))


async def store_conversation(deps: Deps, contents: list[str], prefix: str = "m") -> list[int]:
    rows = deps.indexer.store_messages(USER, new_messages(contents, prefix=prefix))
    return [row["id"] for row in rows]


async def ask(deps: Deps, question: str, prefix: str, **context: Any) -> dict:
    """Store `question` as the user's current message, then run what the graph runs before
    the model: the session summary (`summarise`, or its `extractive_summary` edge) and
    `assemble`. Returns the state after them."""
    (row,) = deps.indexer.store_messages(
        USER,
        [NewMessage(external_id=prefix, role="user", content=question, created_at=NOW)],
    )
    state = ResponseState(text=question, message_id=row["id"], selected_topics=[])
    run = runtime(**context)
    command = await make_summarise(deps)(state, run)
    state.update(command.update)
    if command.goto == "extractive_summary":
        state.update(await make_extractive_summary(deps)(state, run))
    else:
        assert command.goto == "assemble"
    return {**state, **await make_assemble(deps)(state, run)}


def system_text(update: dict) -> str:
    system = update["messages"][1]
    assert isinstance(system, SystemMessage)
    return system.text


def chat_turns(update: dict) -> list[str]:
    return [m.text for m in update["messages"][2:-1]]


async def test_a_segment_within_the_window_has_no_summary_and_no_auto_rag(deps: Deps):
    await store_conversation(deps, [PASSPORT, "Noted.", "Thanks!"])
    update = await ask(deps, "When does my passport expire?", "q")
    assert list(update["context_layers"]) == ["system", "window", "current"]
    system = system_text(update)
    assert "<session_summary>" not in system
    assert "From earlier in this conversation" not in system
    assert chat_turns(update) == [PASSPORT, "Noted.", "Thanks!"]
    assert update["messages"][-1] == HumanMessage("When does my passport expire?")
    assert deps.store.sessions.summary(USER, 0) is None


async def test_a_longer_segment_gets_the_summary_and_auto_rag_before_the_window(deps: Deps):
    await store_conversation(deps, [PASSPORT, "Got it, May 2027.", *FILLER])
    update = await ask(deps, "When does my passport expire and what does renewal cost?", "q")
    assert list(update["context_layers"]) == ["system", "summary", "auto_rag", "window", "current"]
    system = system_text(update)
    assert system.index("<session_summary>") < system.index("<earlier_in_conversation>")
    earlier = system[system.index("<earlier_in_conversation>") :]
    assert "From earlier in this conversation:" in earlier
    assert PASSPORT in earlier
    window = chat_turns(update)
    assert window == FILLER[-WINDOW:]
    assert not any(message in earlier for message in window)
    assert isinstance(update["messages"][2], HumanMessage)
    assert isinstance(update["messages"][3], AIMessage)
    assert update["context_layers"]["auto_rag"] <= 400
    summary = deps.store.sessions.summary(USER, 0)
    assert summary["written_by"] == "extractive"
    assert (summary["first_seq"], summary["last_seq"]) == (1, 6)
    assert "passport expires on 12 May 2027" in summary["summary"]
    assert FILLER[-1] not in summary["summary"]
    used = update["context_used"]
    passport = deps.store.messages.all_of(USER)[0]
    assert passport["id"] in used["earlier_messages"] and used["session_summary"] is True


async def test_the_sources_are_exactly_what_each_layer_kept(deps: Deps):
    """`context_used` lists the records the context shows, not those its budgets left out."""
    await store_conversation(deps, ["Hi!", "Hello."])
    core = deps.store.facts.add(USER, "Lives in Berlin with Ira", "identity", 95)
    facts = [
        deps.store.facts.add(USER, f"Fact {n}: " + "a fairly long detail " * 6, "context", 50)
        for n in range(4)
    ]
    people = [
        deps.store.people.add(USER, f"Person {n}", bio="an old friend " * 8) for n in range(4)
    ]
    (row,) = deps.indexer.store_messages(
        USER, [NewMessage(external_id="q", role="user", content="Who?", created_at=NOW)]
    )
    state = ResponseState(
        text="Who?",
        message_id=row["id"],
        found=found(
            queries=["Who?"],
            facts=[
                {**fact, "score": 0.5} for fact in [deps.store.facts.get(USER, core["id"]), *facts]
            ],
        ),
        selected_people=[{"id": person["id"], "reason": "asked"} for person in people],
    )

    update = await make_assemble(deps)(
        state, runtime(budgets=replace(ResponseContext(user_id=USER).budgets, facts=80, people=80))
    )

    system, used = system_text(update), update["context_used"]
    kept_facts = [fact["id"] for fact in used["facts"] if not fact["core"]]
    assert 0 < len(kept_facts) < len(facts)
    assert kept_facts == [fact["id"] for fact in facts if f"[{fact['id']}] " in system]
    assert [fact for fact in used["facts"] if fact["core"]] == [{"id": core["id"], "core": True}]
    kept_people = [person["id"] for person in used["people"]]
    assert 0 < len(kept_people) < len(people)
    assert kept_people == [p["id"] for p in people if f"- {p['name']} " in system]
    assert used["topics"] == [] and used["earlier_messages"] == []


async def test_short_replies_never_pull_earlier_messages(deps: Deps):
    await store_conversation(deps, [PASSPORT, "Got it, May 2027.", *FILLER])
    update = await ask(deps, "ok", "q")
    assert "auto_rag" not in update["context_layers"]
    assert "summary" in update["context_layers"]


async def test_the_summariser_rewrites_the_summary_every_n_messages(
    make_deps: Callable[..., Deps], fake_model: Callable[..., Any]
):
    model = fake_model("Summary one: passport until May 2027.", "Summary two: plus groceries.")
    deps = make_deps(models={"summariser": model})
    await store_conversation(deps, [PASSPORT, "Got it, May 2027.", *FILLER[:6]])
    first = await ask(deps, "And the plumber?", "q1", summary_refresh_messages=3)
    assert "Summary one: passport until May 2027." in system_text(first)
    assert len(model.prompts) == 1
    assert "(none yet)" in model.prompts[0][1].text
    assert PASSPORT in model.prompts[0][1].text

    await store_conversation(deps, ["The plumber comes at nine."], prefix="a1")
    second = await ask(deps, "And dessert?", "q2", summary_refresh_messages=3)
    assert len(model.prompts) == 1  # two more messages left the window: not yet due
    assert "Summary one" in system_text(second)

    await store_conversation(deps, ["Baked apples it is."], prefix="a2")
    third = await ask(deps, "Anything else?", "q3", summary_refresh_messages=3)
    assert len(model.prompts) == 2
    refresh = model.prompts[1][1].text
    assert "Summary one: passport until May 2027." in refresh  # the previous summary
    assert PASSPORT not in refresh  # only the messages that left the window since
    assert "Summary two: plus groceries." in system_text(third)
    assert deps.store.sessions.summary(USER, 0)["written_by"] == "llm"


async def test_a_failing_summariser_leaves_an_extractive_summary(make_deps: Callable[..., Deps]):
    async with ScriptedOpenAI() as server:
        server.script(http_error(503))
        model = server.chat_model()
        deps = make_deps(models={"summariser": model})
        await store_conversation(deps, [PASSPORT, "Got it, May 2027.", *FILLER])
        update = await ask(deps, "Plans?", "q")
    assert update["summary_fallback"] == "api_error"
    assert "passport expires on 12 May 2027" in system_text(update)
    assert deps.store.sessions.summary(USER, 0)["written_by"] == "extractive"


async def test_new_starts_a_segment_that_sees_nothing_of_the_last(deps: Deps):
    await store_conversation(deps, [PASSPORT, "Got it, May 2027.", *FILLER])
    assert deps.store.sessions.start_new_segment(USER) == 1
    await store_conversation(deps, FILLER[:6], prefix="n")
    update = await ask(deps, "When does my passport expire?", "q")
    system = system_text(update)
    assert "passport" not in system.lower()
    assert deps.store.sessions.summary(USER, 1)["first_seq"] == 11  # segment 1's own start
    assert chat_turns(update) == FILLER[2:6]
    assert {m["segment"] for m in deps.store.messages.recent(USER, 7)} == {1}


async def test_recalled_topics_stay_within_their_budget(deps: Deps):
    rows = deps.indexer.store_messages(
        USER,
        new_messages([f"{i}: " + "a long message about the garden " * 20 for i in range(6)]),
    )
    (topic,) = deps.store.topics.save(USER, [("Garden plans", [row["id"] for row in rows])])
    selected = [SelectedTopic(id=topic["id"], reason="the garden", excerpt=None, score=1.0)]
    small, used_small = topics_section(deps.store, USER, ShownTopics(selected, []), budget=300)
    assert tokens(small) <= 300
    assert "=== Topic" in small and "- Topic " in small and "the garden" in small
    assert used_small == [{**selected[0], "cut": True}]
    whole, used_whole = topics_section(deps.store, USER, ShownTopics(selected, []), budget=8000)
    assert tokens(whole) > 300 and "5: a long message" in whole
    assert used_whole == [{**selected[0], "cut": False}]
    assert topics_section(deps.store, USER, ShownTopics([], []), budget=8000) == ("", [])


SUBJECTS = ["garden", "bicycle", "chess club", "sourdough", "guitar", "tax return", "aquarium"]


def stored_topics(deps: Deps) -> tuple[list[TopicCandidate], int]:
    """Seven topics of four messages each, as search candidates in their stored order; the
    sixth holds the passport message. Returns the candidates and that message's row id."""
    candidates: list[TopicCandidate] = []
    answer_id = 0
    for index, subject in enumerate(SUBJECTS):
        contents = [
            f"Let us talk about the {subject} for a while, there is a lot to say about it.",
            f"Sure, the {subject} again: what is new with the {subject} this week?",
            PASSPORT if index == 5 else f"Nothing much changed with the {subject}, honestly.",
            f"Fine, then the {subject} can wait until next month.",
        ]
        rows = deps.indexer.store_messages(USER, new_messages(contents, prefix=f"s{index}-"))
        (topic,) = deps.store.topics.save(USER, [(subject, [row["id"] for row in rows])])
        candidates.append(
            TopicCandidate(
                id=topic["id"],
                summary=subject,
                date="2026-01-01",
                message_count=4,
                size_chars=topic["size_chars"],
                score=1.0 - index / 10,
                fused_score=1.0 - index / 10,
                vector_score=None,
            )
        )
        if index == 5:
            answer_id = rows[2]["id"]
    return candidates, answer_id


def recalled_topics_layer(deps: Deps, state: ResponseState, budget: int):
    context = ResponseContext(user_id=USER, now_iso=NOW).budgeted(topics=budget)
    sections = dict(recalled_sections(deps.store, USER, state, set(), context))
    return sections["topics"]


@pytest.mark.parametrize("budget", [250, 8000])
async def test_the_search_order_fills_the_room_its_selection_leaves(deps: Deps, budget: int):
    candidates, answer_id = stored_topics(deps)
    # No model chose: the reranker's limit cut the search order after five topics.
    selection = fallback_selection(candidates, [], "no_model", max_topics=5, max_people=0)
    state = ResponseState(
        text="When does my passport expire?",
        found=found(
            queries=["When does my passport expire?"],
            topics=candidates,
            evidence={"text_hits": [[answer_id]], "vector_hits": [], "dated": []},
        ),
        selected_topics=selection.topics,
        rerank_fallback="no_model",
        selected_by_search_order=selection.by_search_order,
    )

    layer = recalled_topics_layer(deps, state, budget)

    assert tokens(layer.text) <= budget
    assert "passport expires on 12 May 2027" in layer.text
    used = {topic["id"]: topic for topic in layer.used}
    sixth = candidates[5]["id"]
    assert used[sixth]["reason"] == "vector order (no_model)"
    if budget == 250:  # the room goes to the hit and its neighbours before the selection
        assert used[sixth]["cut"] is False
        assert "the tax return can wait until next month" in layer.text
        assert len(used) < 5 and all(used[topic]["cut"] for topic in used if topic != sixth)
    # Only the selection has a reason line, one for its one reason: the candidates after
    # it are content alone.
    first_five = ", ".join(str(candidate["id"]) for candidate in candidates[:5])
    assert f"\n- Topics {first_five}: vector order (no_model)\n" in layer.text
    assert layer.text.count("vector order") == 1
    if budget == 8000:  # room for all seven, whole
        assert list(used) == [candidate["id"] for candidate in candidates]
        assert "the aquarium can wait until next month" in layer.text

    # A model's choice of the same five is the context's: the sixth topic stays out.
    chosen = recalled_topics_layer(deps, {**state, "selected_by_search_order": False}, budget)
    assert "passport" not in chosen.text
    assert sixth not in {topic["id"] for topic in chosen.used}


async def test_the_candidates_after_the_selection_are_the_users_own(deps: Deps):
    candidates, answer_id = stored_topics(deps)
    rows = deps.indexer.store_messages(
        2, new_messages(["My vault code is 31-7-44.", "Noted."], prefix="other")
    )
    (foreign,) = deps.store.topics.save(2, [("vault", [row["id"] for row in rows])])
    # A state edited by hand (Studio can resume a thread from any state) names it.
    forged = TopicCandidate(**{**candidates[0], "id": foreign["id"], "summary": "vault"})
    state = ResponseState(
        text="When does my passport expire?",
        found=found(
            queries=["When does my passport expire?"],
            topics=[*candidates[:5], forged, *candidates[5:]],
            evidence={"text_hits": [[answer_id, rows[0]["id"]]], "vector_hits": [], "dated": []},
        ),
        selected_topics=fallback_selection(
            candidates, [], "no_model", max_topics=5, max_people=0
        ).topics,
        rerank_fallback="no_model",
        selected_by_search_order=True,
    )

    for budget in (250, 8000):
        layer = recalled_topics_layer(deps, state, budget)
        assert "31-7-44" not in layer.text
        assert foreign["id"] not in {topic["id"] for topic in layer.used}
        assert "passport expires" in layer.text
    # Nor does the memory-only answer, which quotes from the same topics.
    update = await make_offline_answer(deps)(state, runtime())
    assert "31-7-44" not in update["answer"] and "passport expires" in update["answer"]
    assert foreign["id"] not in {topic["id"] for topic in update["context_used"]["topics"]}
