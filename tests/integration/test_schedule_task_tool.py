"""The responder's `schedule_task` tool in a chat turn, against a scripted OpenAI-compatible
server: "напомни завтра в 9 позвонить маме" creates the task for the user who said it
(only for them), the tool's result names the time understood in the user's zone, and a
"when" it cannot read creates nothing and says so to the model."""

from __future__ import annotations

from collections.abc import Callable

from app.tasks import list_tasks, set_user_timezone
from app.turns import answer_turn, compile_response_graph
from core.deps import Deps
from tests.support.openai_server import ScriptedOpenAI, reply, tool_call

NOW = "2026-11-26T19:00:00+00:00"
CONFIRMATION = "Напомню завтра в 9:00 по Москве."


def tool_results(server: ScriptedOpenAI) -> list[str]:
    messages = server.chat_requests[-1].json_body["messages"]
    return [message["content"] for message in messages if message["role"] == "tool"]


async def chat_turn(deps: Deps, server: ScriptedOpenAI, user_id: int, text: str, when: str):
    server.script(
        tool_call("schedule_task", {"when": when, "request": "позвонить маме"}),
        reply(CONFIRMATION),
    )
    graph = compile_response_graph(deps)
    return await answer_turn(graph, deps, user_id, text, now_iso=NOW)


async def test_a_chat_turn_schedules_the_task_and_confirms_its_time(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"responder": server.chat_model(timeout=10)})
    set_user_timezone(deps, 7, "Moscow")

    result = await chat_turn(deps, server, 7, "напомни завтра в 9 позвонить маме", "завтра в 9:00")

    assert result["answer"] == CONFIRMATION
    [task] = list_tasks(deps, 7)
    assert (task["request"], task["state"], task["recurring"]) == (
        "позвонить маме",
        "active",
        False,
    )
    assert task["next_run"] == "2026-11-27T09:00:00+03:00"
    [result_text] = tool_results(server)
    assert "2026-11-27 09:00 Europe/Moscow" in result_text
    assert list_tasks(deps, 8) == [], "another user sees nothing of it"


async def test_a_when_it_cannot_read_creates_nothing(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"responder": server.chat_model(timeout=10)})

    await chat_turn(deps, server, 7, "напомни когда-нибудь позвонить маме", "когда-нибудь")

    assert list_tasks(deps, 7) == []
    [result_text] = tool_results(server)
    assert "could not read the time" in result_text and "Nothing was scheduled" in result_text
