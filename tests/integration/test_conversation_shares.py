"""A hit lends its share to its replies across the splitter's topic bounds (what another
speaker says next), but not across a sitting's end
(`nodes.response.ranking.messages.replies_after`), on a real store (both engines): the
answer that opens the next topic is kept under a tight budget."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.recall import Recall, rank_members
from nodes.response.ranking.weights import Ranking
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)

QUESTION = "What did you take away from Becoming Nicole?"
READING = [
    "The library finally has air conditioning again.",
    "Good, the reading room was an oven last month.",
    "I spent the whole weekend there with a stack of novels.",
    "I finished Becoming Nicole by Amy Ellis Nutt on Sunday.",
    "What did you take away from Becoming Nicole?",
]
LESSONS = [
    "It taught me self-acceptance and how to find support when things get hard.",
    "That is a lesson worth keeping.",
    "Speaking of support, the dog needs a walk twice a day now.",
    "He has been restless since the move.",
]
ANSWER = LESSONS[0]


def archived(deps: Deps, user_id: int, pause: timedelta) -> tuple[int, int]:
    """The reading talk and, `pause` after it, the lessons, filed as two topics: the
    question that closes the first is answered by the message that opens the second."""
    rows = deps.indexer.store_messages(
        user_id, new_messages(READING + LESSONS, gaps={len(READING): pause})
    )
    reading, lessons = deps.store.topics.save(
        user_id,
        [
            ("Books and the library", [row["id"] for row in rows[: len(READING)]]),
            ("Lessons and the dog", [row["id"] for row in rows[len(READING) :]]),
        ],
    )
    deps.indexer.index_all(user_id)
    return reading["id"], lessons["id"]


def ranked_lines(deps: Deps, topics: list[int]) -> list[str]:
    context = ResponseContext(user_id=USER)
    hits = [[i for i, _ in deps.store.messages.search(USER, QUESTION, 10)]]
    members = [(topic_id, deps.store.messages.of_topic(USER, topic_id)) for topic_id in topics]
    content = {m["id"]: m["content"] for _, messages in members for m in messages}
    order = rank_members(members, Recall([QUESTION], hits), Ranking.of(context))
    return [content[message_id] for _, message_id in order]


@pytest.mark.parametrize("pause", [timedelta(0), timedelta(minutes=40)])
def test_the_reply_that_opens_the_next_topic_shares_the_hit(deps: Deps, pause) -> None:
    archived(deps, OTHER, pause)
    topics = list(archived(deps, USER, pause))
    ranked = ranked_lines(deps, topics)
    # The two hits lead. The answer is as near to them as the line before them is, and
    # comes right after it (its topic ranks second), before the rest of the first topic.
    assert set(ranked[:2]) == {READING[3], READING[4]}
    assert ranked[2:4] == [READING[2], ANSWER]
    # Under a budget of four lines and two headers, the cut keeps those four.
    hits = [[i for i, _ in deps.store.messages.search(USER, QUESTION, 10)]]
    shown, excerpts = relevant_excerpts(
        deps.store,
        USER,
        topics,
        Recall(text_hits=hits),
        Ranking.of(ResponseContext(user_id=USER)),
        420,
    )
    assert shown == topics
    kept = {
        topic_id: [line.split("]: ", 1)[1] for line in text.split("\n")]
        for topic_id, text in excerpts.items()
    }
    assert kept == {topics[0]: READING[2:], topics[1]: [ANSWER]}


def test_a_sittings_end_stops_the_share(deps: Deps) -> None:
    """The next morning (a pause of `chunk_interval` or more) the first message is no
    reply to last night's question: it gets only its topic's rank."""
    topics = list(archived(deps, USER, timedelta(hours=10)))
    ranked = ranked_lines(deps, topics)
    assert set(ranked[:2]) == {READING[3], READING[4]}
    assert ranked.index(ANSWER) >= len(READING)  # after every line of the first topic
