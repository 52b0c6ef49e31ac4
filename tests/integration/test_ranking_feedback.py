"""The ranking's feedback (`nodes.response.ranking.feedback`) on a real SQLite + Chroma
store with the local embedder: it reads the index's vectors of the user's own recalled
messages (the ones embedding them again would give), and the context assembly takes it
when the profile turns it on (the mechanism itself: tests/unit/test_feedback.py)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest

from core.context import ResponseContext
from core.deps import Deps
from core.records import MessageRow
from core.state import SelectedTopic
from nodes.response.assemble import recalled_sections
from nodes.response.ranking.recall import Recall, rank_members, with_feedback
from nodes.response.ranking.weights import Ranking
from nodes.response.search import hybrid_search
from nodes.shared.budget import tokens
from tests.integration.test_excerpts import ZOO, two_topics
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(90)

QUESTION = "What name did Mia give the giraffe?"


async def test_the_feedback_reads_the_indexed_vectors_of_the_users_own_messages(
    deps: Deps,
) -> None:
    garden, zoo = await two_topics(deps)
    deps.indexer.store_messages(OTHER, new_messages(ZOO))  # the same lines, another user's
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00").tuned(
        excerpt_feedback_messages=2
    )
    found = hybrid_search(deps, context, [QUESTION])["found"]
    recall = Recall.of(
        {"text": QUESTION, "found": found},
        deps.embedder,
        partial(deps.indexer.message_vectors, USER),
    )
    assert recall.query is not None and recall.vectors is not None
    members = [(topic, deps.store.messages.of_topic(USER, topic)) for topic in (zoo, garden)]
    rows = {row["id"]: row for _, messages in members for row in messages}
    ranked = [message_id for _, message_id in rank_members(members, recall, Ranking.of(context))]
    fed = with_feedback(rows, recall, context.tuning, ranked)
    assert fed is not None and fed.vector_hits[:-1] == recall.vector_hits
    order = fed.vector_hits[-1]
    assert sorted(order) == sorted(rows)  # every recalled message, and only the user's
    # The index holds every one of them, and what it holds is what embedding them gives.
    assert set(deps.vectors.vectors("messages", USER, list(rows))) == set(rows)

    def embedded(messages: list[MessageRow]) -> object:
        return deps.embedder.encode([message["content"] for message in messages])

    again = with_feedback(rows, replace(recall, vectors=embedded), context.tuning, ranked)
    assert again is not None and again.vector_hits[-1] == order
    # Off in the profile, there is no feedback list.
    assert (
        with_feedback(rows, recall, context.tuned(excerpt_feedback_messages=0).tuning, ranked)
        is None
    )

    # The context assembly reads the recalled messages' vectors when feedback is on (the
    # topic shown in part), and not at all when it is off.
    state = {
        "text": QUESTION,
        "found": found,
        "selected_topics": [SelectedTopic(id=zoo, reason="the zoo", excerpt=None, score=1.0)],
    }
    vectors = partial(deps.indexer.message_vectors, USER)
    read: list[list[int]] = []

    def reading(messages: list[MessageRow]) -> object:
        read.append([message["id"] for message in messages])
        return vectors(messages)

    for tuned, reads in ((context, 1), (context.tuned(excerpt_feedback_messages=0), 0)):
        read.clear()
        small = tuned.budgeted(topics=120)
        sections = recalled_sections(deps.store, USER, state, set(), small, deps.embedder, reading)
        shown = dict(sections)["topics"].text
        assert tokens(shown) <= 120 and "giraffe" in shown
        assert len(read) == reads
    zoo_ids = {row["id"] for row in deps.store.messages.of_topic(USER, zoo)}
    read.clear()
    recalled_sections(
        deps.store, USER, state, set(), context.budgeted(topics=120), deps.embedder, reading
    )
    assert read and set(read[0]) == zoo_ids
