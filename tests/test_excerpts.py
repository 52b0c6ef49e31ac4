"""Relevant messages of recalled topics: the ranking worked out by hand, and the cut the
context assembly makes with it on a real SQLite + Chroma store."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from core.state import SelectedTopic
from nodes.response.assemble import topics_section
from nodes.response.excerpts import (
    LEAD_HITS,
    NEIGHBOUR_HITS,
    rank_topic_messages,
    relevant_excerpts,
)
from nodes.response.search import hybrid_search
from nodes.response.topic_content import EXCERPT_LABEL
from nodes.shared.budget import tokens
from tests.conftest import new_messages

pytestmark = pytest.mark.timeout(60)

USER = 1
OTHER = 2


def test_messages_rank_by_topic_hits_and_the_neighbours_of_hits() -> None:
    # k=1. Priors: topic 10 (rank 1) 1/2 for 1, 2, 3; topic 20 (rank 2) 1/3 for 4, 5.
    # Hit 5 at rank 1 votes 1/2 and lends its neighbour 4 0.7 * 1/2. 99 is in no topic:
    # it takes rank 2 but gets nothing. Hit 2 at rank 3 votes 1/4 and lends 1 and 3
    # 0.7 * 1/4. Scores: 1: 0.675, 2: 0.75, 3: 0.675, 4: 0.683, 5: 0.833 (ties: topic
    # rank, then conversation order).
    topics = [(10, [1, 2, 3]), (20, [4, 5])]
    assert rank_topic_messages(topics, [[5, 99, 2]], k=1) == [
        (20, 5),
        (10, 2),
        (20, 4),
        (10, 1),
        (10, 3),
    ]
    # No hits: topics in rank order, each in conversation order.
    assert rank_topic_messages(topics, [], k=1) == [(10, 1), (10, 2), (10, 3), (20, 4), (20, 5)]
    assert rank_topic_messages([], [[1, 2]], k=60) == []


def test_only_top_hits_lend_their_neighbours_a_share() -> None:
    # One topic (equal priors). Hit 2 at rank NEIGHBOUR_HITS votes 1/21 and lends 1 and 3
    # 0.7/21 each; hit 4 just below votes 1/22 and lends nothing, so 3 stays behind 4
    # (were 4 to lend 0.7/22, 3 would rank first).
    fillers = list(range(100, 100 + NEIGHBOUR_HITS - 1))
    order = rank_topic_messages([(7, [1, 2, 3, 4])], [[*fillers, 2, 4]], k=1)
    assert [message_id for _, message_id in order] == [2, 4, 1, 3]


def test_hits_of_several_queries_add_up() -> None:
    # k=1, one-message topics (no neighbours). Priors: 1: 1/2, 2: 1/3, 3: 1/4.
    # Both lists: 1: 1/2 + 1/2 = 1.0, 2: 1/3 + 1/2 = 0.833, 3: 1/4 + 1/3 + 1/3 = 0.917.
    # The second list alone: 1: 0.5, 2: 0.833, 3: 0.583.
    topics = [(7, [1]), (9, [2]), (8, [3])]
    assert rank_topic_messages(topics, [[1, 3], [2, 3]], k=1, lead=0) == [
        (7, 1),
        (8, 3),
        (9, 2),
    ]
    assert rank_topic_messages(topics, [[2, 3]], k=1, lead=0) == [(9, 2), (8, 3), (7, 1)]


def test_the_best_hits_lead_whatever_their_score() -> None:
    # k=1. Priors: 1, 2: 1/2; 3, 4, 5: 1/3. List A [5, 3, 2] votes 1/2, 1/3, 1/4 and
    # lends 0.7 of each to the neighbours (5 -> 4, 3 -> 4, 2 -> 1); list B [4, 2] votes
    # 1/2, 1/3 (4 -> 3 and 5, 2 -> 1). Fused: 1: 0.908, 2: 1.083, 3: 1.017, 4: 1.417,
    # 5: 1.183. Best hits by rank, then list: 5 (A1), 4 (B1), 3 (A2), 2 (B2).
    topics = [(10, [1, 2]), (20, [3, 4, 5])]
    hits = [[5, 3, 2], [4, 2]]
    ranked = {
        lead: [m for _, m in rank_topic_messages(topics, hits, k=1, lead=lead)]
        for lead in (0, 2, 3)
    }
    assert ranked[0] == [4, 5, 2, 3, 1]
    assert ranked[2] == [5, 4, 2, 3, 1]
    assert ranked[3] == [5, 4, 3, 2, 1]  # 3 leads although 2's fused score is higher
    assert [m for _, m in rank_topic_messages(topics, hits, k=1)] == ranked[LEAD_HITS]


ZOO = [
    "We spent the whole Saturday walking around the city zoo with the kids.",
    "That sounds like a lovely day, which animals did they like most?",
    "The penguins, no doubt, they watched the feeding for half an hour.",
    "Penguins are always a hit. Did you see the new reptile house too?",
    "Yes, and then we had lunch at the cafe near the lake.",
    "Did anything surprise you there?",
    "The giraffe keeper let Mia feed a giraffe with lettuce!",
    "What a memory! How did she react when the giraffe came close?",
    "She was thrilled and called it Caramel on the spot.",
    "That is adorable, Caramel is a great name for a giraffe.",
    "On the way back we bought a plush penguin at the gift shop.",
    "Nice souvenir, it will remind her of the day.",
]
GARDEN = [
    "I planted tomatoes and basil in the garden this morning.",
    "Great, tomatoes like the sunny side of the garden.",
    "I also want to put a small bench near the roses.",
    "A wooden bench would look good next to the roses.",
    "The soil near the fence is very dry though.",
    "Mulch helps the soil keep water in summer.",
]


async def two_topics(deps: Deps) -> tuple[int, int]:
    rows = deps.indexer.store_messages(USER, new_messages(GARDEN + ZOO))
    garden, zoo = deps.store.topics.save(
        USER,
        [
            ("Garden work", [row["id"] for row in rows[: len(GARDEN)]]),
            ("A day at the zoo", [row["id"] for row in rows[len(GARDEN) :]]),
        ],
    )
    return garden["id"], zoo["id"]


async def test_topics_that_do_not_fit_are_cut_to_the_hit_and_the_reply_next_to_it(
    deps: Deps,
) -> None:
    garden, zoo = await two_topics(deps)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    found = hybrid_search(deps, context, ["What name did Mia give the giraffe?"])
    (hits,) = found["message_hits"]
    giraffe = {row["id"] for row in deps.store.messages.all_of(USER) if "giraffe" in row["content"]}
    assert hits and set(hits[:3]) <= giraffe

    selected = [
        SelectedTopic(id=garden, reason="the garden", excerpt=None, score=1.0),
        SelectedTopic(id=zoo, reason="the zoo trip", excerpt=None, score=0.9),
    ]
    whole = topics_section(deps.store, USER, selected, 8000, found["message_hits"])
    assert EXCERPT_LABEL not in whole and "Mulch helps" in whole and "plush penguin" in whole

    budget = 260
    cut = topics_section(deps.store, USER, selected, budget, found["message_hits"])
    assert tokens(cut) <= budget
    # The answer ("called it Caramel") has no word of the question: it is kept as the
    # neighbour of the giraffe messages, while the first topic's opening lines are not.
    assert "called it Caramel" in cut and "feed a giraffe" in cut
    assert EXCERPT_LABEL in cut and "planted tomatoes" not in cut
    # Without the hits, the same budget keeps what comes first and loses the answer.
    blind = topics_section(deps.store, USER, selected, budget, [])
    assert tokens(blind) <= budget and "called it Caramel" not in blind


async def test_a_rerankers_excerpt_is_kept_and_other_users_topics_are_never_shown(
    deps: Deps,
) -> None:
    garden, zoo = await two_topics(deps)
    rows = deps.indexer.store_messages(OTHER, new_messages(["giraffe secrets of user two"]))
    (foreign,) = deps.store.topics.save(OTHER, [("Not yours", [rows[0]["id"]])])
    hits = [[row["id"] for row in deps.store.messages.all_of(USER) if "giraffe" in row["content"]]]
    given = {garden: "[User]: I planted tomatoes and basil."}
    shown, excerpts = relevant_excerpts(
        deps.store, USER, [garden, foreign["id"], zoo], hits, 900, 60, given=given
    )
    assert shown == [garden, zoo]
    assert excerpts[garden] == given[garden]
    assert "feed a giraffe" in excerpts[zoo] and "Caramel" in excerpts[zoo]
    assert "giraffe secrets" not in "".join(excerpts.values())
