"""The archived worlds the reranker, response-graph and fault tests run in.

Each world gives user 1 some archived memory and user 2 a secret that must never reach
user 1: a test asserts on user 1's outputs and checks the secret is nowhere in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from app.memory import archive_user
from core.context import ResponseContext
from core.deps import Deps
from core.found import PersonCandidate, TopicCandidate
from core.records import NewMessage, TopicRow
from core.state import ResponseState
from graphs.reranker import build_reranker_graph
from graphs.response import build_response_graph
from nodes.response.tools import make_response_tools
from tests.support.conversations import CAT_TALK, FIRST_DAY, POSTGRES_TALK, THIRD_DAY
from tests.support.faults import topic_snapshot
from tests.support.found import found
from tests.support.messages import new_messages

USER, OTHER_USER = 1, 2

# -- the reranker's world: topics saved directly, no archiving ---------------------------

RERANK_SECRET = "the launch code is 7741"
RERANK_NOW = "2026-03-10T12:00:00+00:00"
LARGE_MESSAGE_CHARS = 13_000
SCORES = (0.9, 0.8, 0.7, 0.6)


@dataclass
class RerankWorld:
    """User 1's topics (three small, one over the excerpt threshold) and a person; user 2's
    topic holds a secret that must never reach user 1's reranker."""

    deps: Deps
    vllm: TopicRow
    petrov: TopicRow
    docker: TopicRow
    thesis: TopicRow
    foreign: TopicRow
    petrov_person: int

    @property
    def candidates(self) -> list[TopicCandidate]:
        """User 1's candidates as search hands them over: best fused score first."""
        ordered = (self.vllm, self.petrov, self.docker, self.thesis)
        return [candidate(topic, score) for topic, score in zip(ordered, SCORES, strict=True)]

    @property
    def people(self) -> list[PersonCandidate]:
        return [
            PersonCandidate(
                id=self.petrov_person,
                name="Petrov",
                description="colleague from ProjectX",
                score=0.7,
            )
        ]


def candidate(topic: TopicRow, score: float) -> TopicCandidate:
    return TopicCandidate(
        id=topic["id"],
        summary=topic["summary"],
        date=topic["first_message_at"][:10],
        message_count=topic["message_count"],
        size_chars=topic["size_chars"],
        score=score,
        fused_score=score,
        vector_score=score,
    )


def build_rerank_world(deps: Deps) -> RerankWorld:
    def topic(user_id: int, summary: str, contents: list[str], prefix: str) -> TopicRow:
        rows = deps.store.messages.add(user_id, new_messages(contents, prefix=prefix))
        (saved,) = deps.store.topics.save(user_id, [(summary, [row["id"] for row in rows])])
        return saved

    return RerankWorld(
        deps=deps,
        vllm=topic(
            USER,
            "Setting up vLLM for Qwen3 on the H100",
            ["How do I configure vLLM on the H100?", "Use tensor parallel 2 and fp8 weights."],
            "vllm",
        ),
        petrov=topic(
            USER,
            "Petrov from ProjectX and his trip to Berlin",
            ["Remember Petrov from ProjectX?", "Yes, he led the Berlin migration."],
            "petrov",
        ),
        docker=topic(
            USER,
            "A quick Docker question",
            ["Why is my Docker image so big?", "Use a multi-stage build."],
            "docker",
        ),
        thesis=topic(
            USER,
            "The long thesis discussion",
            ["t" * LARGE_MESSAGE_CHARS, "a" * LARGE_MESSAGE_CHARS],
            "thesis",
        ),
        foreign=topic(
            OTHER_USER,
            "Rocket launch preparations",
            [f"Note that {RERANK_SECRET}.", "Noted, keep it secret."],
            "secret",
        ),
        petrov_person=deps.store.people.add(USER, "Petrov", bio="colleague from ProjectX")["id"],
    )


async def rerank(
    world: RerankWorld,
    *,
    candidates: list[TopicCandidate] | None = None,
    people: list[PersonCandidate] | None = None,
    **context: Any,
) -> dict[str, Any]:
    """One run of the reranker subgraph for user 1 over the world's candidates (or these)."""
    graph = build_reranker_graph(world.deps).compile()
    return await graph.ainvoke(
        {
            "query": "Petrov from ProjectX, the Berlin trip and vLLM on H100",
            "user_message": "Remember Petrov? What did we set up on the H100?",
            "profile": ["Works as an ML engineer", "Lives in Lisbon"],
            "found": found(
                topics=world.candidates if candidates is None else candidates,
                people=world.people if people is None else people,
            ),
        },
        context=ResponseContext(user_id=USER, now_iso=RERANK_NOW, **context),
    )


def selected_ids(result: dict[str, Any]) -> list[int]:
    """The ids of the topics a reranker run selected, in its order."""
    return [topic["id"] for topic in result["selected_topics"]]


# -- the response graph's world: both users' sittings archived, a fact each --------------

RESPONSE_SECRET = "restore took 97 minutes"
SITTING_GAP = timedelta(hours=5)
USER_SITTINGS = [
    [
        "We're upgrading Postgres from 14 to 16 in docker compose and the db container "
        "refuses to start after the image change.",
        "The data directory was initialised by PostgreSQL 14, so 16 cannot read it: "
        "dump with pg_dumpall and restore into a fresh volume.",
        "Did it on staging: dump and restore took 14 minutes, all good.",
        "Great, then plan a 30 minute maintenance window for production.",
    ],
    [
        "Марципан третий день почти ничего не ест и очень много пьёт, я переживаю.",
        "Это стоит показать ветеринару, возьмите анализ крови и мочи.",
        "Вернулись от ветеринара: у Марципана хроническая болезнь почек, вторая стадия.",
        "Тогда нужна почечная диета Renal и фонтанчик, чтобы он больше пил.",
    ],
]
OTHER_SITTINGS = [
    [
        "Our Postgres 14 to 16 upgrade in docker compose broke the db container too.",
        "Use pg_dumpall and restore into a new volume; version 16 can't read 14's files.",
        f"On staging the dump and {RESPONSE_SECRET}.",
        "Then production needs a two hour window.",
    ],
]


def sittings_messages(sittings: list[list[str]], prefix: str) -> list[NewMessage]:
    contents = [content for sitting in sittings for content in sitting]
    starts = {index * len(sittings[0]): SITTING_GAP for index in range(1, len(sittings))}
    return new_messages(contents, prefix=prefix, gaps=starts, step=timedelta(minutes=3))


@dataclass
class ResponseWorld:
    """User 1 and user 2 have archived conversations on the same subjects (a Postgres
    upgrade, a sick cat) with different details; user 2's hold a secret."""

    deps: Deps
    user_topics: set[int]
    other_topics: set[int]
    other_fact: int
    user_fact: int


async def build_response_world(deps: Deps) -> ResponseWorld:
    for user_id, sittings, prefix in (
        (USER, USER_SITTINGS, "u"),
        (OTHER_USER, OTHER_SITTINGS, "o"),
    ):
        deps.indexer.store_messages(user_id, sittings_messages(sittings, prefix))
        await archive_user(deps, user_id, archive_all=True)
    tools = {tool.name: tool for tool in make_response_tools(deps)}
    assert tools  # the facts below are indexed the way the tool indexes them
    user_fact = deps.store.facts.add(USER, "Lives in Berlin with Ira", "identity", 95)
    other_fact = deps.store.facts.add(OTHER_USER, "Has a secret project", "context", 60)
    for user_id, fact in ((USER, user_fact), (OTHER_USER, other_fact)):
        deps.vectors.upsert(
            "facts", user_id, [fact["id"]], deps.embedder.encode([fact["content"]]), None
        )
    return ResponseWorld(
        deps=deps,
        user_topics={topic["id"] for topic in deps.store.topics.all_of(USER)},
        other_topics={topic["id"] for topic in deps.store.topics.all_of(OTHER_USER)},
        other_fact=other_fact["id"],
        user_fact=user_fact["id"],
    )


# -- the fault tests' world: user 1's cat and Postgres conversations, user 2's secret ----

OTHER_SECRET = "the vault combination is 31-7-44"


@dataclass
class FaultWorld:
    deps: Deps
    history: list[NewMessage]
    topics: dict[int, tuple[str, list[str]]]
    cat_topic: int
    other_topic: int
    other_fact: dict[str, Any]


async def run_response_turn(
    world: ResponseWorld, text: str, now: str, **context: Any
) -> ResponseState:
    """Store `text` as the world's user's message at `now` and run one turn of the whole
    response graph on it (`context`: `ResponseContext` fields)."""
    (row,) = world.deps.indexer.store_messages(
        USER,
        [NewMessage(external_id=f"q-{text[:20]}", role="user", content=text, created_at=now)],
    )
    graph = build_response_graph(world.deps).compile()
    return await graph.ainvoke(
        {"text": text, "message_id": row["id"]},
        context=ResponseContext(user_id=USER, now_iso=now, **context),
    )


async def build_fault_world(deps: Deps) -> FaultWorld:
    """User 1's cat and Postgres conversations archived (no models); user 2's secret."""
    history = new_messages(CAT_TALK, prefix="cat", start=FIRST_DAY) + new_messages(
        POSTGRES_TALK, prefix="pg", start=THIRD_DAY
    )
    deps.indexer.store_messages(USER, history)
    await archive_user(deps, USER, archive_all=True)
    deps.indexer.store_messages(
        OTHER_USER, new_messages([f"Note that {OTHER_SECRET}.", "Noted."], prefix="o")
    )
    await archive_user(deps, OTHER_USER, archive_all=True)
    other_fact = deps.store.facts.add(OTHER_USER, f"Knows that {OTHER_SECRET}", "context", 70)
    (cat_topic,) = [
        topic["id"] for topic in deps.store.topics.all_of(USER) if "Marzipan" in topic["summary"]
    ]
    (other_topic,) = [topic["id"] for topic in deps.store.topics.all_of(OTHER_USER)]
    return FaultWorld(deps, history, topic_snapshot(deps, USER), cat_topic, other_topic, other_fact)
