"""What was set right in an agent's reply is recorded in the graph's state, agent by agent
(`repairs`), as well as in the ledger: a reply cut at its token limit but still usable is
`truncated`, JSON that needed mending `json_repaired`."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.memory import archive_user
from app.turns import compile_response_graph
from core.context import ResponseContext
from core.deps import Deps
from nodes.shared.agent import LEDGER
from tests.support.messages import new_messages
from tests.support.openai_server import Reply, ScriptedOpenAI, reply
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"
QUESTION = "How long did the Postgres restore take on staging?"


async def test_a_truncated_reply_used_as_it_is_is_recorded_per_agent(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    models = {"enricher": server.chat_model(), "responder": server.chat_model()}
    world = await build_response_world(make_deps(models=models))
    (row,) = world.deps.indexer.store_messages(USER, new_messages([QUESTION], prefix="q"))
    server.script(
        Reply(content="Postgres restore staging duration", finish_reason="length"),
        reply("The restore took 14 minutes."),
    )
    LEDGER.clear()

    state = await compile_response_graph(world.deps).ainvoke(
        {"text": QUESTION, "message_id": row["id"]},
        context=ResponseContext(user_id=USER, now_iso=NOW),
    )

    assert state["query"] == "Postgres restore staging duration"
    assert state["repairs"] == [{"agent": "enricher", "repaired": "truncated"}]
    assert [(c.agent, c.outcome) for c in LEDGER.calls()] == [
        ("enricher", "repaired"),
        ("responder", "accepted"),
    ]


async def test_json_that_needed_mending_is_recorded_in_the_memory_run(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"splitter": server.chat_model()})
    rows = deps.indexer.store_messages(USER, new_messages(["The vet said June.", "Noted."]))
    whole = {"topics": [{"summary": "The vet", "start_msg_id": rows[0]["id"],
                         "end_msg_id": rows[1]["id"]}]}  # fmt: skip
    server.script(reply(json.dumps(whole)[:-2]))  # the closing brackets cut off

    [result] = await archive_user(deps, USER, archive_all=True)

    assert result["split_by"] == "llm"
    assert result["repairs"] == [{"agent": "splitter", "repaired": "json_repaired"}]
