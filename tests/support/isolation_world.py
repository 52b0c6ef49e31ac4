"""The isolation test's world: users who share subjects and sentences but each hold
tokens no other user says (a secret word, a person, a fact, their messages' ids), their
interleaved sessions drawn by Hypothesis, and the checks that nothing of another user's
reaches an output. The scenario: tests/integration/test_isolation.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hypothesis import strategies as st

from core.deps import Deps
from core.found import TopicCandidate
from core.records import NewMessage, Role, TopicRow
from nodes.response.topic_content import topic_date
from tests.support.messages import BASE_TIME

NOW = "2026-04-01T10:00:00+00:00"
STEP = timedelta(minutes=2)
PAUSE = timedelta(hours=3)
"""Longer than the chunk interval: the next message starts a new chunk of its user."""


@dataclass(frozen=True)
class Persona:
    user_id: int
    secret: str
    person: str
    fact: str

    def external_id(self, number: int) -> str:
        return f"x{self.user_id}q{number}z"


PERSONAS = (
    Persona(1101, "quokkazephyr", "Ottoline Vashchenko", "Named the family boat Quokkazephyr"),
    Persona(2202, "marmotblizzard", "Bartholomew Quist", "Named the family boat Marmotblizzard"),
    Persona(3303, "okapitundra", "Perpetua Lindqvist", "Named the family boat Okapitundra"),
    Persona(4404, "ibexsolstice", "Casimir Oyelaran", "Named the family boat Ibexsolstice"),
)
TEMPLATES = (
    "We are upgrading Postgres from 14 to 16 and the staging database is called {secret}.",
    "{person} says the pg_dumpall restore into the {secret} volume took 14 minutes.",
    "Planning a ski trip to Zermatt in February; the chalet booking code is {secret}.",
    "{person} will join the Zermatt ski trip, the pass costs 92 francs a day.",
    "Our cat stopped eating and drinks a lot, the vet file is labelled {secret}.",
    "The vet diagnosed kidney disease in our cat; {person} recommended a renal diet.",
)
QUESTION = "What did we say about the Postgres upgrade, the Zermatt ski trip and the sick cat?"


@dataclass(frozen=True)
class Said:
    """One message of the interleaved sessions: who, which sentence, and a pause before it."""

    speaker: int
    template: int
    role: Role
    pause_before: bool


@st.composite
def interleaved_sessions(draw: st.DrawFn) -> tuple[tuple[Persona, ...], list[Said]]:
    personas = PERSONAS[: draw(st.integers(3, len(PERSONAS)))]
    sentence = st.integers(0, len(TEMPLATES) - 1)
    first_words = [Said(index, draw(sentence), "user", False) for index in range(len(personas))]
    more = draw(
        st.lists(
            st.builds(
                Said,
                st.integers(0, len(personas) - 1),
                sentence,
                st.sampled_from(["user", "assistant"]),
                st.booleans(),
            ),
            max_size=12,
        )
    )
    return personas, draw(st.permutations(first_words + more))


def conversation(
    personas: Sequence[Persona], said: Sequence[Said]
) -> list[tuple[Persona, NewMessage]]:
    """The messages in arrival order, each with its speaker."""
    counts = dict.fromkeys(range(len(personas)), 0)
    moment = BASE_TIME
    messages = []
    for item in said:
        moment += PAUSE if item.pause_before else STEP
        persona = personas[item.speaker]
        counts[item.speaker] += 1
        text = TEMPLATES[item.template].format(secret=persona.secret, person=persona.person)
        messages.append(
            (
                persona,
                NewMessage(
                    external_id=persona.external_id(counts[item.speaker]),
                    role=item.role,
                    content=text,
                    created_at=moment.isoformat(),
                    author=persona.person if item.role == "user" else "Topica",
                ),
            )
        )
    return messages


# -- what each user owns, and what must never reach them ---------------------------------


@dataclass
class Owned:
    persona: Persona
    messages: list[NewMessage]
    topics: list[TopicRow] = dataclasses.field(default_factory=list)
    fact: dict[str, Any] = dataclasses.field(default_factory=dict)
    person: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def topic_ids(self) -> set[int]:
        return {topic["id"] for topic in self.topics}

    def tokens(self) -> list[str]:
        """What only this user ever said or was told: none of it may reach anyone else."""
        persona = self.persona
        return [
            persona.secret,
            persona.person,
            persona.fact,
            *(message["external_id"] for message in self.messages),
        ]


def assert_no_foreign_material(
    label: str, text: str, user: Owned, everyone: dict[int, Owned]
) -> None:
    folded = text.casefold()
    for other in everyone.values():
        if other is user:
            continue
        for token in other.tokens():
            assert token.casefold() not in folded, (
                f"{label} of user {user.persona.user_id} holds {token!r} "
                f"of user {other.persona.user_id}"
            )
        for topic_id in other.topic_ids:
            for mention in (f"=== Topic {topic_id} ===", f"[ID:{topic_id}]"):
                assert mention not in text, f"{label} of user {user.persona.user_id}: {mention}"


def assert_own_external_ids(label: str, external_ids: Sequence[str], user: Owned) -> None:
    prefix = f"x{user.persona.user_id}q"
    foreign = [
        i for i in external_ids if i.startswith("x") and "q" in i and not i.startswith(prefix)
    ]
    assert not foreign, f"{label} of user {user.persona.user_id} lists {foreign}"


def topic_candidate(topic: TopicRow) -> TopicCandidate:
    return TopicCandidate(
        id=topic["id"],
        summary=topic["summary"],
        date=topic_date(topic),
        message_count=topic["message_count"],
        size_chars=topic["size_chars"],
        score=0.99,
        fused_score=0.99,
        vector_score=0.99,
    )


def facts_of_everyone(deps: Deps, users: dict[int, Owned]) -> dict[int, list[dict[str, Any]]]:
    return {
        user_id: [*deps.store.facts.all_of(user_id), *deps.store.facts.history(user_id)]
        for user_id in users
    }
