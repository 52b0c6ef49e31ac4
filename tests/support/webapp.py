"""A user's memory laid down directly in the store, and the Mini App's signed initData,
for the Mini App's tests."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import timedelta

from bot.webapp.auth import sign_init_data
from core.deps import Deps
from tests.support.messages import BASE_TIME, new_messages

TOKEN = "123456:TEST-webapp-token"


@dataclass
class Seeded:
    user_id: int
    topic_id: int
    fact_id: int
    person_id: int
    other_person_id: int
    task_id: int


def seed_user(deps: Deps, user_id: int, secret: str) -> Seeded:
    """One topic about `secret` with two messages, a fact learnt from it, two people, and
    the second message an answer with those as its sources."""
    store = deps.store
    rows = store.messages.add(
        user_id,
        new_messages(
            [f"My friend Anna{secret} plays chess {secret}", f"Nice, chess with Anna{secret}"],
            start=BASE_TIME + timedelta(days=user_id % 7),
            prefix=f"u{user_id}-",
        ),
    )
    (topic,) = store.topics.save(
        user_id, [(f"Chess with Anna{secret} ({secret})", [row["id"] for row in rows])]
    )
    fact = store.facts.add(
        user_id, f"Plays chess with Anna{secret}", "context", 95, topic_id=topic["id"]
    )
    person = store.people.add(user_id, f"Anna{secret}", aliases=[f"Ann{secret}"], circle="friends")
    other = store.people.add(user_id, f"Boris{secret}", circle="work")
    store.answers.record(
        user_id,
        rows[1]["id"],
        {
            "topics": [{"id": topic["id"], "reason": "chess"}],
            "facts": [{"id": fact["id"]}],
            "people": [{"id": person["id"]}],
        },
        answered_by="responder",
    )
    task = store.tasks.add(
        user_id, f"Call Anna{secret}", BASE_TIME + timedelta(days=400), "UTC", rule=None
    )
    deps.indexer.index_all(user_id)
    return Seeded(user_id, topic["id"], fact["id"], person["id"], other["id"], task["id"])


def init_data(user_id: int, *, language: str = "en", age_s: float = 0, token: str = TOKEN) -> str:
    """initData Telegram would give the Mini App of `user_id`, signed `age_s` ago."""
    fields = {
        "query_id": "AAHdF6IQAAAAAN0XohDhrOrc",
        "user": json.dumps(
            {"id": user_id, "first_name": "Test", "language_code": language},
            separators=(",", ":"),
        ),
        "auth_date": str(int(time.time() - age_s)),
    }
    return sign_init_data(fields, token)
