"""Provider faults in the memory graph, through the real `ChatOpenAI` and the scripted
OpenAI-compatible server.

The splitter, the merger and the archivist meet HTTP 500, 429 with Retry-After, a
timeout, a dropped connection, malformed, truncated, wrongly shaped and empty JSON,
and hallucinated ids, each on the wire. For each fault the expected behaviour is
asserted (the fallback edge taken and its reason, the retry made) and so are the
storage invariants: every stored message is still there with its content, after
archiving each message is in exactly one of its user's topics, and a second archiving
run creates nothing. The response path: test_response_faults.py; through the bot:
tests/e2e/test_bot_faults.py.

The nodes' fallback logic is tested with fake models next to each node; here the faults
are real HTTP behaviour, so what is proven is that each one surfaces as an exception or
a reply the node handles, and that nothing stored is lost on the way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime

import pytest

from app.memory import archive_user
from core.deps import Deps
from core.records import NewMessage
from tests.support.conversations import (
    CAT_TALK,
    FIRST_DAY,
    POSTGRES_TALK,
    archive_day_by_day,
    told_twice,
)
from tests.support.faults import (
    ENOUGH,
    JSON_AGENT_FAULTS,
    Fault,
    assert_all_stored,
    assert_archived_once,
    assert_fell_back,
    assert_nothing_lost,
    chat_model,
    topic_snapshot,
)
from tests.support.messages import new_messages
from tests.support.models import with_models
from tests.support.openai_server import ScriptedOpenAI, Step, http_error, reply
from tests.support.worlds import OTHER_SECRET, OTHER_USER, USER

pytestmark = pytest.mark.timeout(60)

NOW_DT = datetime.fromisoformat("2026-03-20T10:00:00+00:00")


def failing_agent(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI, agent: str, step: Step
) -> tuple[Deps, list[NewMessage]]:
    """Services whose `agent` gets `step` from the provider on every call, and the cat
    conversation told twice, for user 1 (stored by `archive_day_by_day`)."""
    deps = make_deps(models={agent: chat_model(server, steps=[step])})
    server.script(*[step] * ENOUGH)
    return deps, told_twice()


# -- the memory graph -------------------------------------------------------------------


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_splitter_takes_the_segment_edge_and_loses_nothing(
    make_deps, server: ScriptedOpenAI, fault: Fault, caplog: pytest.LogCaptureFixture
):
    deps, sent = failing_agent(make_deps, server, "splitter", fault.step)

    results = await archive_day_by_day(deps, USER, sent)

    assert len(server.chat_requests) == len(results) == 2
    assert [result["split_by"] for result in results] == ["embeddings", "embeddings"]
    assert [result["split_fallback"] for result in results] == [fault.reason] * 2
    assert_fell_back(caplog, "splitter", fault)
    await assert_nothing_lost(deps, USER, sent)


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_merger_leaves_the_decision_to_the_rule(
    make_deps, server: ScriptedOpenAI, fault: Fault, caplog: pytest.LogCaptureFixture
):
    deps, sent = failing_agent(make_deps, server, "merger", fault.step)

    first, second = await archive_day_by_day(deps, USER, sent)

    assert len(server.chat_requests) == 1
    assert first["merges"] == []
    [merge] = second["merges"]
    assert (merge["decided_by"], second["merge_fallback"]) == ("rule", fault.reason)
    assert merge["reason"].startswith("similarity ")
    assert_fell_back(caplog, "merger", fault)
    assert len(deps.store.topics.all_of(USER)) == 1
    await assert_nothing_lost(deps, USER, sent)


@pytest.mark.parametrize("fault", JSON_AGENT_FAULTS.values(), ids=JSON_AGENT_FAULTS.keys())
async def test_a_failing_archivist_fails_its_facts_and_the_topics_are_retried_next_run(
    make_deps, server: ScriptedOpenAI, fault: Fault, caplog: pytest.LogCaptureFixture
):
    deps, sent = failing_agent(make_deps, server, "archivist", fault.step)

    results = await archive_day_by_day(deps, USER, sent)

    facts = results[-1]["facts"]
    assert (facts["status"], facts["reason"], facts["waiting"]) == ("failed", fault.reason, 1)
    assert_fell_back(caplog, "archivist", fault)
    assert deps.store.facts.all_of(USER) == []
    assert deps.store.topics.without_facts(USER, 10) == deps.store.topics.all_of(USER)
    assert_all_stored(deps, USER, sent)
    assert_archived_once(deps, USER)

    # The next run (a later conversation makes a chunk) asks a healthy archivist again
    # about the topics it failed on.
    server.clear_script()
    fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
    server.script(*[reply(json.dumps({"facts": [fact]}))] * ENOUGH)
    later = new_messages(["Marzipan drinks from the fountain now."], prefix="c", start=NOW_DT)
    deps.indexer.store_messages(USER, later)
    [rerun] = await archive_user(deps, USER, archive_all=True)

    assert rerun["facts"]["status"] == "done"
    assert set(topic_snapshot(deps, USER)) <= set(rerun["facts"]["topics"])
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    assert deps.store.topics.without_facts(USER, 10) == []
    await assert_nothing_lost(deps, USER, sent + later)


async def test_topics_whose_facts_failed_are_retried_by_the_next_run_without_new_messages(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """The archivist was down when the conversation was archived; it is back at the next
    run. Nothing new was said, so no chunk is ready, yet the topics it failed on are still
    waiting for their facts: the next run has to ask again. (The bot's worker only runs
    users with a ready chunk, so today a user who stops talking never gets them.)"""
    deps, sent = failing_agent(make_deps, server, "archivist", http_error(500, "upstream exploded"))
    results = await archive_day_by_day(deps, USER, sent)
    assert results[-1]["facts"]["status"] == "failed"

    server.clear_script()
    fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
    server.script(*[reply(json.dumps({"facts": [fact]}))] * ENOUGH)
    await archive_user(deps, USER, archive_all=True)

    assert deps.store.topics.without_facts(USER, 10) == []
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    await assert_nothing_lost(deps, USER, sent)


async def test_rate_limits_are_waited_out_and_the_agents_answers_used(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """429 with Retry-After, then an answer: with one client retry, every agent's own answer
    is used and no fallback is taken."""
    splitter_server, merger_server, archivist_server = server, ScriptedOpenAI(), ScriptedOpenAI()
    async with merger_server, archivist_server:
        deps = make_deps(
            models={
                "splitter": chat_model(splitter_server, max_retries=1),
                "merger": chat_model(merger_server, max_retries=1),
                "archivist": chat_model(archivist_server, max_retries=1),
            }
        )
        sent = told_twice()
        limited = http_error(429, "slow down", retry_after=0.2)
        for first_id in (1, 7):  # the ids the two days' six messages are stored under
            topic = {"summary": "Marzipan's renal diet", "start_msg_id": first_id}
            topic["end_msg_id"] = first_id + 5
            splitter_server.script(limited, reply(json.dumps({"topics": [topic]})))
        merger_server.script(
            limited,
            reply(json.dumps({"should_merge": True, "reason": "one story", "merged_summary": "M"})),
        )
        fact = {"action": "add", "content": "Has a cat named Marzipan", "type": "context"}
        archivist_server.script(*[limited, reply(json.dumps({"facts": [fact]}))] * 2)
        started = asyncio.get_running_loop().time()

        first, second = await archive_day_by_day(deps, USER, sent)

        waited = asyncio.get_running_loop().time() - started
        assert [r["split_by"] for r in (first, second)] == ["llm", "llm"]
        assert [r["facts"]["status"] for r in (first, second)] == ["done", "done"]
        [merge] = second["merges"]
        assert (merge["decided_by"], merge["reason"]) == ("llm", "one story")
        assert [topic["summary"] for topic in deps.store.topics.all_of(USER)] == ["M"]
        assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
        for scripted, calls in ((splitter_server, 4), (merger_server, 2), (archivist_server, 4)):
            assert len(scripted.chat_requests) == calls and not scripted.pending
        assert waited >= 5 * 0.2, "a retry came before its Retry-After"
        await assert_nothing_lost(deps, USER, sent)


async def test_hallucinated_ids_from_the_splitter_and_archivist_are_contained(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
):
    """Topic bounds outside the chunk are clamped and the gaps covered; fact and person ids
    that do not exist or are another user's are refused, and the other user's memory is
    unchanged."""
    deps = make_deps()
    theirs = deps.store.facts.add(OTHER_USER, f"Remembers that {OTHER_SECRET}", "context", 80)
    their_person = deps.store.people.add(OTHER_USER, "Ottoline Vashchenko", bio="keeps the vault")
    deps = with_models(deps, splitter=chat_model(server), archivist=chat_model(server))
    sent = new_messages(CAT_TALK + POSTGRES_TALK, start=FIRST_DAY)
    rows = deps.indexer.store_messages(USER, sent)
    ghost = 10**7
    server.script(
        reply(
            json.dumps(
                {
                    "topics": [
                        {
                            "summary": "Marzipan's kidneys",
                            "start_msg_id": -5,
                            "end_msg_id": rows[3]["id"],
                        },
                        {"summary": "Ghost", "start_msg_id": ghost, "end_msg_id": ghost + 9},
                        {"summary": "Postgres", "start_msg_id": rows[8]["id"], "end_msg_id": ghost},
                    ],
                    "stragglers": [ghost + 1],
                }
            )
        ),
        *[
            reply(
                json.dumps(
                    {
                        "facts": [
                            {"action": "update", "id": theirs["id"], "content": "Hijacked"},
                            {"action": "delete", "id": theirs["id"]},
                            {"action": "delete", "id": ghost},
                            {"action": "add", "content": "Has a cat named Marzipan"},
                        ],
                        "people": [
                            {"action": "update", "id": their_person["id"], "bio": "Hijacked"},
                            {"action": "merge", "id": their_person["id"], "merge_into": ghost},
                        ],
                    }
                )
            )
        ]
        * ENOUGH,
    )

    [result] = await archive_user(deps, USER, archive_all=True)

    assert (result["split_by"], result["split_fallback"]) == ("llm", None)
    assert result["facts"]["status"] == "done"
    assert (result["facts"]["updated"], result["facts"]["deleted"]) == (0, 0)
    assert deps.store.facts.get(OTHER_USER, theirs["id"]) == theirs
    assert deps.store.people.all_of(OTHER_USER) == [their_person]
    assert [f["content"] for f in deps.store.facts.all_of(USER)] == ["Has a cat named Marzipan"]
    assert deps.store.people.all_of(USER) == []
    summaries = [summary for summary, _ in topic_snapshot(deps, USER).values()]
    assert "Ghost" not in summaries and "Marzipan's kidneys" in summaries
    await assert_nothing_lost(deps, USER, sent)
