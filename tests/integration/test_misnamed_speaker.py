"""A question that names the wrong one of two speakers, on a real SQLite + Chroma store
with the real search and embedder: the line both the full-text and the vector hits put
first is shown whoever the question names (`nodes.response.ranking.speakers.agreed_hits`;
worked out by hand: tests/unit/test_speakers.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.recall import Recall
from nodes.response.ranking.weights import Ranking
from nodes.response.search import hybrid_search
from tests.support.messages import USER, new_messages

pytestmark = pytest.mark.timeout(60)

TALK = [
    "That necklace is gorgeous, Caroline! Do you treasure anything else like it?",
    "Yes, Melanie! My hand-painted bowl, a friend made it for my 18th birthday. "
    "It reminds me of art and self-expression.",
    "Lovely. I just took my family camping in the mountains last week.",
    "Camping sounds great, did the kids enjoy the hike up to the lake?",
    "They did, and we roasted marshmallows by the fire every evening.",
    "I went biking with friends along the river on Sunday.",
]
"""Melanie and Caroline in turn, Melanie first."""


async def test_the_line_both_lists_put_first_is_shown_whoever_the_question_names(
    deps: Deps,
) -> None:
    messages = new_messages(TALK)
    for index, message in enumerate(messages):
        message["role"], message["author"] = "user", ("Melanie", "Caroline")[index % 2]
    rows = deps.indexer.store_messages(USER, messages)
    [topic] = deps.store.topics.save(USER, [("Keepsakes and camping", [r["id"] for r in rows])])
    bowl = rows[1]["id"]
    # The bowl is Caroline's; the question says Melanie's.
    question = "What is Melanie's hand-painted bowl a reminder of?"
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    evidence = hybrid_search(deps, context, [question])["found"]["evidence"]
    text_hits, vector_hits = evidence["text_hits"], evidence["vector_hits"]
    assert text_hits[0][0] == bowl and bowl in vector_hits[0][:1]

    def excerpt(recall: Recall) -> str:
        # Room for the excerpt's header and about two of the topic's lines.
        shown, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"]], recall, Ranking.of(context), 330
        )
        assert shown == [topic["id"]]
        return excerpts[topic["id"]]

    agreed = excerpt(Recall([question], text_hits, vector_hits))
    assert "self-expression" in agreed
    # Found by its words alone, the bowl is Caroline's line and only lends its neighbours
    # their share: Melanie's lines beside it fill the room.
    words_only = excerpt(Recall([question], text_hits))
    assert "self-expression" not in words_only and "necklace" in words_only
