"""A turn's deadline: a responder that writes on and on never leaves the user in silence.

The scripted server streams a reply that would take minutes (one word every 50 ms);
with `TOPICA_TURN_DEADLINE_S` at 4 s the models' run is cut at half of it and the turn is
answered with what was recalled, after a note in the question's language, before the
deadline: the question stored once, the answer once, the late words never sent on."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from app.deadline import DEADLINE_NOTE
from app.turns import answer_turn, compile_response_graph
from core.deps import Deps
from tests.support.openai_server import ScriptedOpenAI, delay, reply
from tests.support.sqlite_lock import hold_lock
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(120)

NOW = "2026-03-20T10:00:00+00:00"
DEADLINE_S = 4.0
SLACK_S = 1.0
FOREVER = reply(" ".join(["and"] * 5000), pace_s=0.05)


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("How long did the Postgres restore take on staging?", "en"),
        ("Сколько длилось восстановление Postgres на staging?", "ru"),
    ],
)
async def test_past_the_deadline_the_user_gets_what_was_recalled_with_a_note(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, question: str, language: str
):
    responder = server.chat_model(timeout=60)
    deps = make_deps(models={"responder": responder}, turn_deadline_s=DEADLINE_S)
    world = await build_response_world(deps)
    server.script(FOREVER)
    seen: list[str] = []
    graph = compile_response_graph(world.deps)
    started = time.monotonic()

    result = await answer_turn(graph, world.deps, USER, question, now_iso=NOW, on_text=seen.append)

    took = time.monotonic() - started
    # The answer is due by the deadline (the turn's, from its start: the graph is compiled
    # before); reading the turn's result back after it, on a loaded machine, may take up
    # to SLACK_S more.
    assert DEADLINE_S / 2 <= took < DEADLINE_S + SLACK_S, "answered after the models' half"
    assert seen, "the answer streamed until the models' time was up"
    streamed = len(seen)
    await asyncio.sleep(0.3)
    assert len(seen) == streamed, "the late model output is never sent on"
    assert "and and" not in result["answer"]
    stored = world.deps.store.messages.recent(USER, 2)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["content"] == question
    assert "and and" not in stored[1]["content"], "the stored answer is the recalled one"
    assert stored[1]["content"] == result["answer"], "stored as sent, with the note"
    note = DEADLINE_NOTE[language].format(seconds=DEADLINE_S)
    assert result["answer"].startswith(note + "\n\n")
    assert "Postgres" in result["answer"], "what was recalled is quoted"
    assert result["deadline_exceeded"] is True
    assert result["answered_by"] != "responder"
    assert len(server.chat_requests) == 1, "the memory-only answer asks no model"


async def test_a_run_cut_before_its_context_is_answered_by_the_whole_memory_only_graph(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    enricher = server.chat_model(timeout=60)
    deps = make_deps(models={"enricher": enricher}, turn_deadline_s=DEADLINE_S)
    world = await build_response_world(deps)
    server.script(delay(60))
    question = "How long did the Postgres restore take on staging?"
    graph = compile_response_graph(world.deps)
    started = time.monotonic()

    result = await answer_turn(graph, world.deps, USER, question, now_iso=NOW)

    assert time.monotonic() - started < DEADLINE_S + SLACK_S
    assert result["answer"].startswith(DEADLINE_NOTE["en"].format(seconds=DEADLINE_S))
    assert "Postgres" in result["answer"]
    assert result["deadline_exceeded"] is True
    stored = world.deps.store.messages.recent(USER, 2)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["content"] == result["answer"], "stored as sent, with the note"


async def test_within_the_deadline_the_answer_is_the_models(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"responder": server.chat_model()}, turn_deadline_s=30)
    world = await build_response_world(deps)
    server.script(reply("The restore took 14 minutes."))
    result = await answer_turn(
        compile_response_graph(world.deps), world.deps, USER, "How long was the restore?",
        now_iso=NOW,
    )  # fmt: skip
    assert result["answer"] == "The restore took 14 minutes."
    assert "deadline_exceeded" not in result


@pytest.mark.parametrize(
    "hold_s", [DEADLINE_S / 2 + 0.5, DEADLINE_S + 1], ids=["past the budget", "past the deadline"]
)
async def test_a_deadline_that_falls_while_the_answer_is_stored_sends_the_stored_answer(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, hold_s: float
):
    deps = make_deps(models={"responder": server.chat_model()}, turn_deadline_s=DEADLINE_S)
    world = await build_response_world(deps)
    server.script(reply("The restore took 14 minutes."))
    holders: list[threading.Thread] = []

    def lock_the_store(_text: str) -> None:
        # While the model writes, another connection takes the store's write lock and
        # keeps it past the models' budget (or the deadline): the deadline falls during
        # finalize's store.
        if not holders:
            path = world.deps.settings.sqlite_path
            holders.append(threading.Thread(target=hold_lock, args=(path, hold_s)))
            holders[0].start()

    graph = compile_response_graph(world.deps)
    started = time.monotonic()
    result = await answer_turn(
        graph, world.deps, USER, "How long was the restore?", now_iso=NOW,
        on_text=lock_the_store,
    )  # fmt: skip
    took = time.monotonic() - started
    await asyncio.to_thread(holders[0].join)

    assert took < DEADLINE_S + SLACK_S, "sent in time, however long the store waits"
    stored = await stored_turn(world.deps)
    assert stored[0]["content"] == "How long was the restore?"
    assert stored[1]["content"] == result["answer"] == "The restore took 14 minutes."
    assert "deadline_exceeded" not in result


async def stored_turn(deps: Deps) -> list[dict]:
    """The question and the one answer stored, once a store left to end on its own has."""
    for _ in range(50):
        stored = deps.store.messages.recent(USER, 2)
        if stored[-1]["role"] == "assistant":
            break
        await asyncio.sleep(0.1)
    assert [m["role"] for m in stored] == ["user", "assistant"], "one answer stored"
    return stored


def hold_lock_once_asked(deps: Deps, question: str) -> None:
    """Once the question is stored, another connection takes the write lock and keeps it
    past the deadline: the memory-only answer's store cannot end in time."""
    while not any(m["content"] == question for m in deps.store.messages.recent(USER, 1)):
        time.sleep(0.02)
    hold_lock(deps.settings.sqlite_path, DEADLINE_S + 1)


async def test_a_memory_only_answer_whose_store_is_held_past_the_deadline_is_sent_in_time(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    responder = server.chat_model(timeout=60)
    deps = make_deps(models={"responder": responder}, turn_deadline_s=DEADLINE_S)
    world = await build_response_world(deps)
    server.script(FOREVER)
    question = "How long did the Postgres restore take on staging?"
    holder = threading.Thread(target=hold_lock_once_asked, args=(world.deps, question))
    graph = compile_response_graph(world.deps)
    started = time.monotonic()
    holder.start()
    result = await answer_turn(graph, world.deps, USER, question, now_iso=NOW)
    took = time.monotonic() - started
    await asyncio.to_thread(holder.join)

    assert took < DEADLINE_S + SLACK_S, "the answer is sent while its store still waits"
    assert result["answer"].startswith(DEADLINE_NOTE["en"].format(seconds=DEADLINE_S))
    assert "Postgres" in result["answer"]
    stored = await stored_turn(world.deps)
    assert stored[1]["content"] == result["answer"], "stored as sent, with the note"
