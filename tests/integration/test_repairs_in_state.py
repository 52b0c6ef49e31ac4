"""What was set right in an agent's reply is recorded in the graph's state, agent by agent
(`repairs`), as well as in the ledger `topica bench models` reads: a reply cut at its token
limit but still usable is `truncated`, JSON that needed mending `json_repaired`. The
scripted server answers each agent in such a wrong but repairable shape."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from app.media import MediaDigester, media_item
from app.memory import archive_user
from app.turns import compile_response_graph
from bench.models import agent_rows
from core.context import ResponseContext
from core.deps import Deps
from nodes.shared.agent import LEDGER
from tests.support.conversations import archive_day_by_day, told_twice
from tests.support.messages import new_messages
from tests.support.openai_server import Reply, ScriptedOpenAI, reply
from tests.support.worlds import USER, build_response_world

pytestmark = pytest.mark.timeout(60)

NOW = "2026-03-20T10:00:00+00:00"
QUESTION = "How long did the Postgres restore take on staging?"
PHOTO = b"\xff\xd8\xff" + b"\x10" * 600


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


def shown_repairs(agent: str) -> dict[str, int]:
    """The repairs `topica bench models` shows for `agent` (its table reads the ledger)."""
    return agent_rows(LEDGER.calls())[agent]["repairs"]


async def test_the_mergers_mended_json_is_recorded_in_the_memory_run(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"merger": server.chat_model()})
    decision = {"should_merge": True, "reason": "one visit", "merged_summary": "The vet visit"}
    server.script(reply(json.dumps(decision)[:-1]))  # the closing brace cut off
    LEDGER.clear()

    first, second = await archive_day_by_day(deps, USER, told_twice())

    assert first["repairs"] == []
    [merge] = second["merges"]
    assert merge["decided_by"] == "llm" and second["merge_fallback"] is None
    assert second["repairs"] == [{"agent": "merger", "repaired": "json_repaired"}]
    assert shown_repairs("merger") == {"json_repaired": 1}


async def test_the_archivists_mended_json_is_recorded_in_the_memory_run(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"archivist": server.chat_model()})
    deps.indexer.store_messages(USER, new_messages(["The vet said June.", "Noted."]))
    actions = {"facts": [{"action": "add", "content": "The vet said June", "type": "context"}],
               "people": []}  # fmt: skip
    server.script(reply(json.dumps(actions)[: -len("[]}")] + "["))  # unclosed list and object
    LEDGER.clear()

    [result] = await archive_user(deps, USER, archive_all=True)

    assert result["facts"]["status"] == "done" and result["facts"]["added"] == 1
    assert result["repairs"] == [{"agent": "archivist", "repaired": "json_repaired"}]
    assert shown_repairs("archivist") == {"json_repaired": 1}


async def test_a_summary_written_again_cut_at_its_limit_is_recorded_in_the_run(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    data_dir = make_deps().settings.data_dir
    first = make_deps(data_dir=data_dir)
    [row, _] = first.indexer.store_messages(USER, new_messages(["The vet said June.", "Noted."]))
    await archive_user(first, USER, archive_all=True)
    first.store.messages.rewrite(USER, row["id"], "The vet said July.", edit=True)
    first.indexer.store_messages(USER, new_messages(["Buy the small bag."], prefix="n"))
    deps = make_deps(models={"splitter": server.chat_model()}, data_dir=data_dir)
    server.script(
        Reply(content="The vet moved the booster to July", finish_reason="length"),
        reply("not json"),  # the new chunk's split falls back: its own outcome
    )
    LEDGER.clear()

    [result] = await archive_user(deps, USER, archive_all=True)

    assert result["resummarised"] == [row_topic(deps, row["id"])]
    assert result["resummary_fallback"] is None
    assert result["split_fallback"] == "invalid_output"
    assert result["repairs"] == [{"agent": "splitter", "repaired": "truncated"}]
    assert shown_repairs("splitter") == {"truncated": 1}


def row_topic(deps: Deps, message_id: int) -> int:
    [message] = deps.store.messages.by_ids(USER, [message_id])
    return message["topic_id"]


async def test_the_describers_cut_description_is_recorded_in_the_media_run(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    deps = make_deps(models={"describer": server.chat_model()})
    [row] = deps.indexer.store_messages(USER, new_messages(["[photo] where I live"]))
    photo = media_item(row["id"], "image", "photo.jpg", "image/jpeg", PHOTO, row["content"])
    server.script(Reply(content="A red bicycle leaning on a blue", finish_reason="length"))
    LEDGER.clear()

    state = await MediaDigester(deps).digest(USER, [photo])

    assert state["describe_fallback"] is None
    assert state["texts"] == {row["id"]: "A red bicycle leaning on a blue"}
    assert state["repairs"] == [{"agent": "describer", "repaired": "truncated"}]
    assert shown_repairs("describer") == {"truncated": 1}
