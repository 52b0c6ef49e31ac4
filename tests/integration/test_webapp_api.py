"""The Mini App's API over HTTP on loopback, on real stores: Telegram's initData is the
only way in, every read and write stays inside the signed user's memory, and every write
leaves the vector index consistent with the store.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.test_utils import TestServer

from app.doctor import doctor
from app.views import export_user
from bot.webapp.api import webapp_application
from core.deps import Deps
from tests.support.webapp import TOKEN, Seeded, init_data, seed_user

A, B, STRANGER = 1001, 2002, 3003


@pytest.fixture
def deps(make_deps) -> Deps:
    return make_deps(telegram_token=TOKEN, allowed_user_ids=[A, B])


@pytest_asyncio.fixture
async def server(deps: Deps) -> AsyncIterator[TestServer]:
    async with TestServer(webapp_application(deps), host="127.0.0.1") as test_server:
        yield test_server


@pytest.fixture
def users(deps: Deps) -> tuple[Seeded, Seeded]:
    return seed_user(deps, A, "alpha"), seed_user(deps, B, "bravo")


async def call(
    server: TestServer, method: str, path: str, auth: str | None, payload: Any = None
) -> tuple[int, Any, Any]:
    headers = {"Authorization": auth} if auth is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, server.make_url("/webapp/api" + path), headers=headers, json=payload
        ) as response,
    ):
        text = await response.text()
        data = json.loads(text) if text and response.status != 401 else text
        return response.status, data, response.headers


def tma(user_id: int, **kwargs: Any) -> str:
    return "tma " + init_data(user_id, **kwargs)


async def test_a_sees_only_their_memory(server: TestServer, users: tuple[Seeded, Seeded]):
    a, _ = users
    status, topics, headers = await call(server, "GET", "/topics", tma(A))
    assert status == 200 and [t["id"] for t in topics] == [a.topic_id]
    assert "frame-ancestors https://web.telegram.org" in headers["Content-Security-Policy"]
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    _, found, _ = await call(server, "GET", "/topics?q=chess%20alpha", tma(A))
    assert [t["id"] for t in found] == [a.topic_id]
    _, facts, _ = await call(server, "GET", "/facts", tma(A))
    assert [(f["id"], f["core"]) for f in facts["context"]] == [(a.fact_id, True)]
    _, people, _ = await call(server, "GET", "/people", tma(A))
    assert {p["name"] for p in people} == {"Annaalpha", "Borisalpha"}
    anna = next(p for p in people if p["id"] == a.person_id)
    assert anna["aliases"] == ["Annalpha"] and [t["id"] for t in anna["topics"]] == [a.topic_id]
    _, topic, _ = await call(server, "GET", f"/topics/{a.topic_id}", tma(A))
    assert len(topic["messages"]) == 2 and [f["id"] for f in topic["facts"]] == [a.fact_id]
    _, answers, _ = await call(server, "GET", "/answers", tma(A))
    [answer] = answers
    assert answer["content"] == "Nice, chess with Annaalpha"
    assert [t["id"] for t in answer["sources"]["topics"]] == [a.topic_id]
    assert [p["id"] for p in answer["sources"]["people"]] == [a.person_id]
    _, tasks, _ = await call(server, "GET", "/tasks", tma(A))
    assert [(t["id"], t["request"], t["state"]) for t in tasks] == [
        (a.task_id, "Call Annaalpha", "active")
    ]
    _, exported, headers = await call(server, "GET", "/export", tma(A))
    assert exported["user_id"] == A and "attachment" in headers["Content-Disposition"]
    everything = json.dumps([topics, facts, people, topic, answers, tasks, exported])
    assert "bravo" not in everything
    _, me, _ = await call(server, "GET", "/me", tma(A, language="ru"))
    assert me == {"language": "ru"}


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "",
        "Bearer x",
        "tma ",
        "tma garbage",
        "forged",
        "expired",
        "wrong token",
        "stranger",
        "future",
    ],
)
async def test_anything_but_a_fresh_signature_of_an_allowed_user_is_401(
    server: TestServer, deps: Deps, users: tuple[Seeded, Seeded], auth: str | None
):
    forged = init_data(A).replace("hash=", "hash=0")
    cases = {
        "forged": "tma " + forged,
        "expired": tma(A, age_s=86400 + 120),
        "wrong token": tma(A, token="654321:other-bot"),
        "stranger": tma(STRANGER),
        "future": tma(A, age_s=-3600),
    }
    for path in ("/topics", "/facts", "/people", "/answers", "/tasks", "/export", "/me"):
        status, text, headers = await call(server, "GET", path, cases.get(auth, auth))
        assert (status, text) == (401, ""), path
        assert "Content-Security-Policy" in headers
    status, _, _ = await call(
        server, "PATCH", f"/facts/{users[0].fact_id}", cases.get(auth, auth), {"content": "x"}
    )
    assert status == 401
    assert export_user(deps, A)["facts"][0]["content"] == "Plays chess with Annaalpha"


async def test_tampered_user_id_is_401(server: TestServer, users: tuple[Seeded, Seeded]):
    signed_b = init_data(B)
    tampered = signed_b.replace(f"%22id%22%3A{B}", f"%22id%22%3A{A}")
    assert tampered != signed_b
    status, text, _ = await call(server, "GET", "/topics", "tma " + tampered)
    assert (status, text) == (401, "")


async def test_a_never_reads_or_writes_b_records(
    server: TestServer, deps: Deps, users: tuple[Seeded, Seeded]
):
    _, b = users
    before = export_user(deps, B)
    attempts = [
        ("GET", f"/topics/{b.topic_id}", None),
        ("PATCH", f"/facts/{b.fact_id}", {"content": "stolen"}),
        ("DELETE", f"/facts/{b.fact_id}", None),
        ("PATCH", f"/people/{b.person_id}", {"name": "stolen"}),
        ("POST", f"/people/{b.person_id}/merge", {"into": b.other_person_id}),
        ("POST", f"/people/{users[0].person_id}/merge", {"into": b.person_id}),
        ("DELETE", f"/people/{b.person_id}", None),
        ("DELETE", f"/topics/{b.topic_id}", None),
        ("POST", f"/tasks/{b.task_id}/pause", None),
        ("POST", f"/tasks/{b.task_id}/resume", None),
        ("POST", f"/tasks/{b.task_id}/cancel", None),
    ]
    for method, path, payload in attempts:
        status, data, _ = await call(server, method, path, tma(A), payload)
        assert (status, data) == (404, {"error": "not found"}), (method, path)
    assert export_user(deps, B) == before
    assert len(export_user(deps, A)["people"]) == 2


async def test_writes_go_through_the_services(
    server: TestServer, deps: Deps, users: tuple[Seeded, Seeded]
):
    a, b = users
    status, fact, _ = await call(
        server, "PATCH", f"/facts/{a.fact_id}", tma(A), {"content": "Plays go with Annaalpha"}
    )
    assert status == 200 and fact["content"] == "Plays go with Annaalpha"
    history = [h for h in export_user(deps, A)["fact_history"] if h["action"] == "update"]
    assert history[-1]["reason"] == "edited by the user"
    status, person, _ = await call(
        server, "PATCH", f"/people/{a.person_id}", tma(A), {"name": "Anya"}
    )
    assert person["name"] == "Anya" and "Annaalpha" in person["aliases"]
    _, merged, _ = await call(
        server, "POST", f"/people/{a.other_person_id}/merge", tma(A), {"into": a.person_id}
    )
    assert "Borisalpha" in merged["aliases"]
    assert (await doctor(deps, [A, B]))["consistent"]
    status, _, _ = await call(server, "DELETE", f"/topics/{a.topic_id}", tma(A))
    assert status == 200
    left = export_user(deps, A)
    assert left["topics"] == [] and left["facts"] == []
    assert (await doctor(deps, [A, B]))["consistent"]
    soon = datetime.now(UTC) + timedelta(hours=1)
    for user in (A, B):
        deps.store.tasks.add(user, "call mom", soon, "UTC", None)
    b_tasks = deps.store.tasks.of_user(B)
    assert len(b_tasks) == 2  # the seeded one and "call mom"
    status, _, _ = await call(server, "POST", "/forget-all", tma(A), {"confirm": True})
    assert status == 200 and export_user(deps, A)["people"] == []
    assert deps.store.tasks.of_user(A) == [] and deps.store.tasks.of_user(B) == b_tasks
    assert export_user(deps, B)["facts"][0]["id"] == b.fact_id
    assert (await doctor(deps, [A, B]))["consistent"]


async def test_tasks_pause_resume_and_cancel(
    server: TestServer, deps: Deps, users: tuple[Seeded, Seeded]
):
    a, b = users
    for action, state in [("pause", "paused"), ("resume", "active"), ("cancel", "cancelled")]:
        status, task, _ = await call(server, "POST", f"/tasks/{a.task_id}/{action}", tma(A))
        assert (status, task["id"], task["state"]) == (200, a.task_id, state), action
        [stored] = export_user(deps, A)["tasks"]
        assert stored["state"] == state
    status, refused, _ = await call(server, "POST", f"/tasks/{a.task_id}/resume", tma(A))
    assert (status, refused) == (409, {"error": f"task {a.task_id} is cancelled"})
    status, _, _ = await call(server, "POST", f"/tasks/{b.task_id}/launch", tma(A))
    assert status == 400
    status, _, _ = await call(server, "POST", f"/tasks/{a.task_id}/pause", None)
    assert status == 401
    assert export_user(deps, B)["tasks"][0]["state"] == "active"


async def test_bad_bodies_are_refused(server: TestServer, users: tuple[Seeded, Seeded]):
    a, _ = users
    path = f"/facts/{a.fact_id}"
    for payload, status in [
        ({"content": ""}, 400),
        ({"content": 5}, 400),
        ([1, 2], 400),
        ({"content": "x" * 20_000}, 413),
    ]:
        got, _, _ = await call(server, "PATCH", path, tma(A), payload)
        assert got == status, payload
    got, _, _ = await call(server, "GET", "/topics/abc", tma(A))
    assert got == 400
    got, _, _ = await call(server, "POST", "/forget-all", tma(A), {})
    assert got == 400
