"""Commitments become reminder offers: the Archivist, on the scripted OpenAI-compatible
server, names what the user promised with a time and the message that says it; an offer
is stored for each readable time still ahead, in the user's zone, and nothing is
scheduled until the user accepts. Without a model nothing is offered; another user's
message, the assistant's words, an unreadable or past time offer nothing; an offer is
answered only by its user, once."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.editing import forget_everything
from app.memory import archive_user
from app.offers import OfferError, OfferPassed, accept_offer, dismiss_offer
from app.views import export_user
from core.deps import Deps
from core.records import MessageRow, parse_timestamp
from core.when import zone
from tests.support.messages import new_messages
from tests.support.openai_server import ScriptedOpenAI, reply, respond

pytestmark = pytest.mark.timeout(120)

ALICE, BORIS = 1, 2
PROMISE = "Пришлю Ивану отчёт завтра в 18:00, обещаю."
TALK = [
    PROMISE,
    "Хорошо, не забудьте.",
    "И когда-нибудь разберу гараж.",
    "Звучит как план.",
]
BORIS_TALK = ["I will pay the rent tomorrow at 10:00.", "Noted."]


def line_id(request: dict[str, Any], words: str) -> int:
    """The `[id=N]` of the transcript line that holds `words`, in the Archivist's prompt."""
    prompt = request["messages"][-1]["content"]
    found = re.search(r"\[id=(\d+)\] \[[^\]]*\]: " + re.escape(words), prompt)
    assert found, f"no line with {words!r} in the Archivist's prompt"
    return int(found.group(1))


def archivist_naming(
    commitments: Callable[[dict[str, Any]], list[dict[str, Any]]],
) -> Callable[[dict[str, Any]], Any]:
    """An Archivist reply with no facts and the commitments built from the request."""

    def answer(request: dict[str, Any]) -> Any:
        return reply(json.dumps({"facts": [], "people": [], "commitments": commitments(request)}))

    return answer


def store_talk(deps: Deps, user_id: int, talk: list[str], start: datetime) -> list[MessageRow]:
    return deps.indexer.store_messages(
        user_id, new_messages(talk, start=start, prefix=f"u{user_id}-")
    )


async def test_a_promise_with_a_time_becomes_one_offer_and_nothing_else(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"archivist": server.chat_model()})
    deps.store.tasks.set_timezone(ALICE, "Europe/Moscow")
    start = datetime.now(UTC) - timedelta(hours=2)
    alice = store_talk(deps, ALICE, TALK, start)
    boris = store_talk(deps, BORIS, BORIS_TALK, start)

    def commitments(request: dict[str, Any]) -> list[dict[str, Any]]:
        promise = line_id(request, PROMISE)
        return [
            {"text": "прислать Ивану отчёт", "when": "завтра в 18:00", "message_id": promise},
            {"text": "то же ещё раз", "when": "завтра в 18:00", "message_id": alice[1]["id"]},
            {"text": "разобрать гараж", "when": "когда-нибудь", "message_id": alice[2]["id"]},
            {"text": "pay Boris's rent", "when": "tomorrow at 10:00", "message_id": boris[0]["id"]},
            {"text": "без сообщения", "when": "завтра в 18:00"},
        ]

    server.script(respond(archivist_naming(commitments)))

    [result] = await archive_user(deps, ALICE, archive_all=True)

    assert result["facts"]["status"] == "done"
    [offer] = deps.store.offers.of_user(ALICE)
    assert (offer["request"], offer["said_when"], offer["state"]) == (
        "прислать Ивану отчёт",
        "завтра в 18:00",
        "offered",
    )
    assert offer["message_id"] == alice[0]["id"] and offer["rule"] is None
    said_at = parse_timestamp(alice[0]["created_at"]).astimezone(zone("Europe/Moscow"))
    due = parse_timestamp(offer["due_at"]).astimezone(zone("Europe/Moscow"))
    assert (due.date(), due.hour, due.minute) == (said_at.date() + timedelta(days=1), 18, 0)
    assert offer["timezone"] == "Europe/Moscow" and offer["sent_at"] is None
    assert deps.store.tasks.of_user(ALICE) == [], "nothing is scheduled without a press"
    assert deps.store.offers.of_user(BORIS) == []
    assert export_user(deps, ALICE)["reminder_offers"] == [offer]


async def test_without_a_model_nothing_is_offered(deps: Deps) -> None:
    store_talk(deps, ALICE, TALK, datetime.now(UTC) - timedelta(hours=2))

    [result] = await archive_user(deps, ALICE, archive_all=True)

    assert result["facts"]["reason"] == "no_model"
    assert deps.store.offers.of_user(ALICE) == []


async def test_a_time_already_past_is_not_offered(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"archivist": server.chat_model()})
    store_talk(deps, ALICE, TALK, datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    server.script(
        respond(
            archivist_naming(
                lambda request: [
                    {
                        "text": "отчёт",
                        "when": "завтра в 18:00",
                        "message_id": line_id(request, PROMISE),
                    }
                ]
            )
        )
    )

    await archive_user(deps, ALICE, archive_all=True)

    assert len(server.chat_requests) == 1
    assert deps.store.offers.of_user(ALICE) == []


def stored_offer(deps: Deps, due_in: timedelta, rule: str | None = None) -> dict[str, Any]:
    [message] = store_talk(deps, ALICE, [PROMISE], datetime.now(UTC))
    offer = deps.store.offers.add(
        ALICE, message["id"], "прислать отчёт", "завтра", datetime.now(UTC) + due_in, "UTC", rule
    )
    assert offer is not None
    return offer


async def test_an_offer_is_answered_by_its_user_once(deps: Deps) -> None:
    offer = stored_offer(deps, timedelta(days=1))
    with pytest.raises(OfferError):
        accept_offer(deps, BORIS, offer["id"])
    with pytest.raises(OfferError):
        dismiss_offer(deps, BORIS, offer["id"])
    assert deps.store.tasks.of_user(BORIS) == [] and deps.store.tasks.of_user(ALICE) == []

    task = accept_offer(deps, ALICE, offer["id"])

    assert (task["request"], task["next_run_at"], task["state"]) == (
        "прислать отчёт",
        offer["due_at"],
        "active",
    )
    answered = deps.store.offers.get(ALICE, offer["id"])
    assert (answered["state"], answered["task_id"]) == ("accepted", task["id"])
    with pytest.raises(OfferError):
        accept_offer(deps, ALICE, offer["id"])
    with pytest.raises(OfferError):
        dismiss_offer(deps, ALICE, offer["id"])
    assert len(deps.store.tasks.of_user(ALICE)) == 1

    assert forget_everything(deps, ALICE) >= 2
    assert deps.store.offers.of_user(ALICE) == [] and deps.store.tasks.of_user(ALICE) == []


async def test_a_past_offer_schedules_nothing_and_a_dismissed_one_nothing(deps: Deps) -> None:
    past = stored_offer(deps, timedelta(minutes=1))
    with pytest.raises(OfferPassed):
        accept_offer(deps, ALICE, past["id"], now=datetime.now(UTC) + timedelta(hours=1))
    assert deps.store.offers.get(ALICE, past["id"])["state"] == "offered"

    assert dismiss_offer(deps, ALICE, past["id"])["state"] == "dismissed"
    assert deps.store.tasks.of_user(ALICE) == []


async def test_hostile_commitments_offer_nothing_and_lose_no_fact(
    make_deps: Callable[..., Deps], server: ScriptedOpenAI
) -> None:
    deps = make_deps(models={"archivist": server.chat_model()})
    store_talk(deps, ALICE, TALK, datetime.now(UTC) - timedelta(hours=2))

    def answer(request: dict[str, Any]) -> Any:
        promise = line_id(request, PROMISE)
        commitments = [
            {"text": "huge id", "when": "завтра в 18:00", "message_id": 2**70},
            {"text": "long when", "when": "завтра " * 40, "message_id": promise},
            {"text": "year ten thousand", "when": "31 декабря 99999", "message_id": promise},
            {"text": "   ", "when": "завтра в 18:00", "message_id": promise},
            {"text": "отчёт\x00 Ивану", "when": "завтра в 18:00", "message_id": promise},
        ]
        fact = {"action": "add", "type": "context", "content": "Готовит отчёт для Ивана"}
        return reply(json.dumps({"facts": [fact], "people": [], "commitments": commitments}))

    server.script(respond(answer))

    [result] = await archive_user(deps, ALICE, archive_all=True)

    assert (result["facts"]["status"], result["facts"]["added"]) == ("done", 1)
    assert [fact["content"] for fact in deps.store.facts.all_of(ALICE)] == [
        "Готовит отчёт для Ивана"
    ]
    [offer] = deps.store.offers.of_user(ALICE)
    assert "\x00" not in offer["request"] and "Ивану" in offer["request"]
