"""What the search hands on for one turn (`Found`): its queries, its topic, people and fact
candidates, and the message lists they are ranked by. Plain TypedDicts of JSON-friendly
values, like the graph states that hold them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

from core.records import FactType


class TopicCandidate(TypedDict):
    """A topic found by hybrid search, as the reranker sees it."""

    id: int
    summary: str
    date: str
    """First message's date, YYYY-MM-DD."""
    message_count: int
    size_chars: int
    score: float
    """The score of the topic's best message (`nodes.response.ranking.recall.order_topics`);
    candidates are ordered by it, best first."""
    fused_score: float
    """The topic's own fused (RRF) score: the search keeps the best candidates by it."""
    vector_score: float | None
    """Cosine similarity to the query, when the vector search found it."""


class PersonCandidate(TypedDict):
    id: int
    name: str
    description: str
    score: float


class FactCandidate(TypedDict):
    """A fact of the user found by vector search for this turn."""

    id: int
    content: str
    type: FactType
    importance: int
    score: float
    """Cosine similarity to the query."""


class Evidence(TypedDict):
    """What a search found besides its candidates: the messages the candidates' order and
    the context's excerpts are ranked by."""

    text_hits: list[list[int]]
    """Message ids hit by full-text (BM25) search, best first, one list per query; long
    messages ranked by their best passage (`nodes.response.ranking.text_passages`)."""
    vector_hits: list[list[int]]
    """Message ids nearest to each query's vector, best first, one list per query."""
    dated: list[int]
    """Message ids written on the days and in the months the queries name, those the
    other lists found first."""


class Found(TypedDict):
    """What the search hands on for one turn: the queries it searched, its candidates and
    the evidence they are ranked by. The reranker chooses among its topics and people; the
    context shows its facts and ranks the recalled topics' messages by its queries and
    evidence."""

    queries: list[str]
    """The turn's distinct queries, the raw message first."""
    topics: list[TopicCandidate]
    """The best `retrieved_topics_count` by fused score, ordered by their best message
    (`TopicCandidate.score`)."""
    people: list[PersonCandidate]
    """Best cosine to the queries first."""
    facts: list[FactCandidate]
    """Best cosine to the queries first."""
    evidence: Evidence


NOTHING_FOUND = Found(
    queries=[],
    topics=[],
    people=[],
    facts=[],
    evidence=Evidence(text_hits=[], vector_hits=[], dated=[]),
)
"""What a turn no search ran for hands on."""


def found_in(state: Mapping[str, Any]) -> Found:
    """What a turn's search handed on (`state["found"]`), or `NOTHING_FOUND` where no
    search ran."""
    return state.get("found") or NOTHING_FOUND
