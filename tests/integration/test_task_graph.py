"""The task graph in the scheduler's pass, against a scripted OpenAI-compatible server on
loopback (real SQLite, Chroma and encoder): a reminder is sent as written without a
model; a task that asks for work is answered by the Tasker, whose prompt has exactly the
seed's layers and which searches the user's memory (and only that user's) with its tool,
its sources recorded like an answer's; a failing model takes the fallback edge and the run is still
delivered; each run's message is stored in the history as a `task` message."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.browsing import recent_answers
from app.scheduling import run_due, task_message_id
from app.tasks import add_task
from core.deps import Deps
from core.records import MEMORY_KIND
from tests.support.messages import new_messages
from tests.support.openai_server import (
    ScriptedOpenAI,
    delay,
    drop_connection,
    http_error,
    reply,
    tool_call,
)

NOW = datetime(2026, 11, 26, 19, 0, tzinfo=UTC)
DUE = NOW + timedelta(hours=2, seconds=1)
ANSWER = "Про стоматолога: вы записаны на 4 декабря к доктору Сомову."


class Outbox:
    def __init__(self) -> None:
        self.sent: list[tuple[int, int, str, bool]] = []
        self.answer_ids: list[int | None] = []
        """The stored answer whose Sources button each message carries, if any."""

    async def __call__(
        self, user_id: int, task, text: str, late: bool, answer_id: int | None
    ) -> None:
        self.sent.append((user_id, task["id"], text, late))
        self.answer_ids.append(answer_id)


def remember(deps: Deps, user_id: int, secret: str) -> None:
    """One archived topic about the user's dentist appointment, naming `secret`."""
    rows = deps.store.messages.add(
        user_id,
        new_messages(
            [f"Записался к стоматологу {secret} на 4 декабря", "Хорошо, запомню"],
            prefix=f"u{user_id}-",
        ),
    )
    deps.store.topics.save(
        user_id, [(f"Стоматолог {secret}, запись на 4 декабря", [row["id"] for row in rows])]
    )
    deps.indexer.index_all(user_id)


@pytest.fixture
def with_tasker(make_deps: Callable[..., Deps], server: ScriptedOpenAI):
    def build(**overrides: Any) -> Deps:
        return make_deps(models={"tasker": server.chat_model(timeout=1.0)}, **overrides)

    return build


def stored_task_messages(deps: Deps, user_id: int) -> list[tuple[str, str, str]]:
    return [
        (row["external_id"], row["kind"], row["content"])
        for row in deps.store.messages.all_of(user_id)
        if row["kind"] != MEMORY_KIND
    ]


async def test_a_reminder_is_sent_as_written_without_asking_the_model(with_tasker, server):
    deps = with_tasker()
    task = add_task(deps, 1, "через 2 часа", "позвонить маме", now=NOW)
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=DUE) == 1

    assert outbox.sent == [(1, task["id"], "позвонить маме", False)]
    assert outbox.answer_ids == [None], "a plain reminder has no Sources button"
    assert server.chat_requests == []
    [run] = deps.store.tasks.runs(1, task["id"], 5)
    assert (run["output"], run["fallback_reason"], run["tools_called"]) == (
        "позвонить маме",
        None,
        [],
    )
    assert deps.store.answers.all_of(1) == [], "a plain reminder has no sources to show"
    due_at = task["next_run_at"]
    assert stored_task_messages(deps, 1) == [
        (task_message_id(task["id"], due_at), "task", "позвонить маме")
    ]


def prompt_of(request) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.json_body["messages"])


async def test_a_work_task_searches_the_users_memory_with_its_tool(with_tasker, server):
    deps = with_tasker()
    remember(deps, 1, "Сомов")
    remember(deps, 2, "Чужаков")
    deps.store.messages.add(1, new_messages(["Недавно купил велосипед"], prefix="recent-"))
    core = deps.store.facts.add(1, "Живёт в Казани", "identity", 95)
    task = add_task(deps, 1, "через 2 часа", "проверь, что я говорил про стоматолога", now=NOW)
    server.script(tool_call("search_history", {"query": "стоматолог запись"}), reply(ANSWER))
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=DUE) == 1

    assert outbox.sent == [(1, task["id"], ANSWER, False)]
    first, second = server.chat_requests
    system, user = first.json_body["messages"]
    assert (system["role"], user["role"]) == ("system", "user")
    assert "Живёт в Казани" in system["content"], "core facts are in the system prompt"
    assert "<previous_runs>\n(none)\n</previous_runs>" in user["content"]
    assert "проверь, что я говорил про стоматолога" in user["content"]
    layers = prompt_of(first)
    for absent in ("<recalled_topics>", "<earlier_in_conversation>", "<memory>"):
        assert absent not in layers, f"no auto-RAG, no window: {absent}"
    assert "Сомов" not in layers, "memory is not recalled up front"
    assert "велосипед" not in layers, "no sliding window of recent messages"
    assert [tool["function"]["name"] for tool in first.json_body["tools"]] == ["search_history"]
    found = prompt_of(second)
    assert "Сомов" in found, "the tool finds the user's own memory"
    assert "Чужаков" not in found, "and never another user's"
    [run] = deps.store.tasks.runs(1, task["id"], 5)
    assert (run["output"], run["fallback_reason"], run["tools_called"]) == (
        ANSWER,
        None,
        ["search_history"],
    )
    assert [kind for _, kind, _ in stored_task_messages(deps, 1)] == ["task"]
    assert stored_task_messages(deps, 2) == []
    [sent] = [row["id"] for row in deps.store.messages.all_of(1) if row["kind"] == "task"]
    hits = [found for found, _ in deps.store.messages.search(1, "доктору Сомову", 5)]
    assert hits and sent not in hits, "a task message is not searched as memory"
    assert outbox.answer_ids == [sent], "the message carries its stored answer's Sources"
    [own_topic] = deps.store.topics.all_of(1)
    answer = deps.store.answers.get(1, sent)
    assert answer is not None and answer["answered_by"] == "responder"
    used = answer["context_used"]
    assert [topic["id"] for topic in used["topics"]] == [own_topic["id"]]
    assert used["facts"] == [{"id": core["id"], "core": True}]
    assert used["tools"] == [{"name": "search_history", "args": {"query": "стоматолог запись"}}]
    assert deps.store.answers.get(2, sent) is None, "a stranger sees no sources of it"
    [shown] = recent_answers(deps, 1)
    assert (shown["answer_id"], shown["content"]) == (sent, ANSWER)
    assert [topic["summary"] for topic in shown["sources"]["topics"]] == [own_topic["summary"]]
    assert recent_answers(deps, 2) == []


async def test_the_tasker_answers_without_tools_once_its_rounds_are_spent(with_tasker, server):
    deps = with_tasker()
    remember(deps, 1, "Сомов")
    task = add_task(deps, 1, "через 2 часа", "найди, что я писал про стоматолога", now=NOW)
    rounds = [tool_call("search_history", {"query": f"стоматолог {n}"}) for n in range(3)]
    server.script(*rounds, reply(ANSWER))
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=DUE) == 1

    assert [text for *_, text, _ in outbox.sent] == [ANSWER]
    *searching, last = server.chat_requests
    assert len(searching) == 3 and all("tools" in r.json_body for r in searching)
    assert "tools" not in last.json_body, "the last request has the tools switched off"
    [run] = deps.store.tasks.runs(1, task["id"], 5)
    assert run["tools_called"] == ["search_history"] * 3


async def test_the_next_run_sees_the_previous_runs(with_tasker, server):
    deps = with_tasker()
    task = add_task(deps, 1, "каждый день в 21:00", "подведи итоги дня", now=NOW)
    server.script(reply("Итог первого дня"), reply("Итог второго дня"))
    outbox = Outbox()
    first = datetime(2026, 11, 26, 21, 0, 1, tzinfo=UTC)

    assert await run_due(deps, "a", outbox, now=first) == 1
    assert await run_due(deps, "a", outbox, now=first + timedelta(days=1)) == 1

    second_prompt = server.chat_requests[1].json_body["messages"][1]["content"]
    assert "Итог первого дня" in second_prompt
    assert [text for *_, text, _ in outbox.sent] == ["Итог первого дня", "Итог второго дня"]
    assert len(stored_task_messages(deps, 1)) == 2
    assert deps.store.tasks.get(1, task["id"])["state"] == "active"


@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (http_error(500), "api_error"),
        (drop_connection(), "api_error"),
        (delay(3.0, reply("too late")), "timeout"),
        (reply("   "), "empty_reply"),
    ],
)
async def test_a_failing_model_takes_the_fallback_edge_and_still_delivers(
    with_tasker, server, failure, reason
):
    deps = with_tasker()
    task = add_task(deps, 1, "через 2 часа", "summarise what I planned", now=NOW)
    server.script(failure)
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=DUE) == 1

    [(_, _, text, _)] = outbox.sent
    assert "summarise what I planned" in text and "needs a language model" in text
    [run] = deps.store.tasks.runs(1, task["id"], 5)
    assert (run["output"], run["fallback_reason"]) == (text, reason)
    assert [content for *_, content in stored_task_messages(deps, 1)] == [text]
    [sent] = [row["id"] for row in deps.store.messages.all_of(1) if row["kind"] == "task"]
    answer = deps.store.answers.get(1, sent)
    assert answer is not None and answer["answered_by"] == "memory"
    assert answer["context_used"]["fallbacks"] == {"tasker": reason}


async def test_without_a_model_a_work_task_says_it_needs_one(deps: Deps):
    task = add_task(deps, 1, "через 2 часа", "найди, что я писал про отпуск", now=NOW)
    outbox = Outbox()

    assert await run_due(deps, "a", outbox, now=DUE) == 1

    [run] = deps.store.tasks.runs(1, task["id"], 5)
    assert run["fallback_reason"] == "no_model"
    assert "найди, что я писал про отпуск" in outbox.sent[0][2]
