"""Provider faults on the wire, and what must hold in storage whatever the fault.

Each fault is a step of the scripted OpenAI-compatible server; the agents reach it
through the real `ChatOpenAI` with a short timeout and no retries unless a test asks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from app.memory import archive_user
from core.deps import Deps
from core.records import NewMessage
from tests.support import openai_server as wire
from tests.support.models import with_models
from tests.support.openai_server import ScriptedOpenAI, Step

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

ANSWERED_BUDGET_S = 10.0
"""The client's timeout when every scripted step answers. The server shares the test's event
loop, so on a loaded machine it may read a request late; no answer may turn into a timeout."""
HELD_BACK_BUDGET_S = 1.0
"""The client's timeout when a step holds its answer back (`delay`, five times longer)."""
ENOUGH = 12
"""Every scripted fault is repeated this often: more than any run here calls the model."""


def chat_model(
    server: ScriptedOpenAI, *, steps: Iterable[Step] = (), max_retries: int = 0
) -> ChatOpenAI:
    """The agent's client for `server`: it gives up only where one of the `steps` the test
    scripts is held back past its timeout."""
    held_back = any(isinstance(step, wire.Delay) for step in steps)
    budget = HELD_BACK_BUDGET_S if held_back else ANSWERED_BUDGET_S
    return server.chat_model(timeout=budget, max_retries=max_retries)


@dataclass(frozen=True)
class Fault:
    """What the provider answers to every call, the error the agent then sees (named in
    the log line of its fallback) and the fallback reason it records."""

    step: Step
    error: str
    reason: str


PROVIDER_FAULTS = {
    "http_500": Fault(wire.http_error(500, "upstream exploded"), "OpenAIAPIError", "api_error"),
    "http_429": Fault(
        wire.http_error(429, "slow down", retry_after=0.05), "OpenAIRateLimitError", "api_error"
    ),
    "timeout": Fault(wire.delay(5.0, wire.reply("{}")), "OpenAITimeoutError", "timeout"),
    "dropped_connection": Fault(wire.drop_connection(), "OpenAIConnectionError", "api_error"),
}
JSON_FAULTS = {
    "malformed_json": Fault(
        wire.raw_content("Sure! Two topics: the cat, and the cat again."),
        "reply is not JSON",
        "invalid_output",
    ),
    "truncated_json": Fault(
        wire.raw_content('{"facts": [{"action": "add", "importance": 500'),
        "reply does not match",
        "invalid_output",
    ),
    "wrong_shape_json": Fault(
        wire.raw_content('[{"title": "Marzipan"}]'), "reply does not match", "invalid_output"
    ),
    "empty_json": Fault(wire.empty_reply(), "empty reply", "empty_reply"),
}
JSON_AGENT_FAULTS = {**PROVIDER_FAULTS, **JSON_FAULTS}


def assert_fell_back(caplog: pytest.LogCaptureFixture, agent: str, fault: Fault) -> None:
    """The agent's fallback was logged once per call with its reason and the error."""
    lines = [r.getMessage() for r in caplog.records if f"{agent} fell back" in r.getMessage()]
    assert lines, f"no fallback of the {agent} was logged"
    assert all(f"fell back: {fault.reason}: " in line and fault.error in line for line in lines)


# -- storage invariants ---------------------------------------------------------------


def assert_all_stored(deps: Deps, user_id: int, sent: list[NewMessage]) -> None:
    stored = deps.store.messages.all_of(user_id)
    assert [(m["external_id"], m["role"], m["content"]) for m in stored] == [
        (m["external_id"], m["role"], m["content"]) for m in sent
    ]


def topic_snapshot(deps: Deps, user_id: int) -> dict[int, tuple[str, list[str]]]:
    topics = deps.store.topics.all_of(user_id)
    members = deps.store.messages.external_ids_by_topic(user_id, [topic["id"] for topic in topics])
    return {topic["id"]: (topic["summary"], members[topic["id"]]) for topic in topics}


def assert_archived_once(deps: Deps, user_id: int) -> None:
    """Every message in exactly one of the user's topics; topic counts and the index agree."""
    topics = {topic["id"]: topic for topic in deps.store.topics.all_of(user_id)}
    membership = Counter(message["topic_id"] for message in deps.store.messages.all_of(user_id))
    assert None not in membership, "a message was left out of every topic"
    assert set(membership) == set(topics), (
        "a message points at a missing topic, or a topic is empty"
    )
    assert {i: t["message_count"] for i, t in topics.items()} == dict(membership)
    assert deps.vectors.count("topics", user_id) == len(topics)


async def assert_nothing_lost(deps: Deps, user_id: int, sent: list[NewMessage]) -> None:
    """All stored, archived once, and archiving again (healthy models or none) changes nothing."""
    assert_all_stored(deps, user_id, sent)
    assert_archived_once(deps, user_id)
    before = topic_snapshot(deps, user_id)
    assert await archive_user(with_models(deps), user_id, archive_all=True) == []
    assert topic_snapshot(deps, user_id) == before, "a second run created or changed topics"
