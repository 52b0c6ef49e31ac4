"""The evaluation fills from the topics the response graph's context shows, no more."""

from __future__ import annotations

from bench.topica import ranked_topic_ids, shown_topic_ids
from core.found import TopicCandidate
from core.state import ResponseState, SelectedTopic
from tests.support.found import found


def candidate(topic_id: int) -> TopicCandidate:
    return TopicCandidate(
        id=topic_id,
        summary=f"topic {topic_id}",
        date="2026-01-01",
        message_count=2,
        size_chars=100,
        score=1.0 / topic_id,
        fused_score=1.0 / topic_id,
        vector_score=None,
    )


def picked(topic_id: int, reason: str) -> SelectedTopic:
    return SelectedTopic(id=topic_id, reason=reason, excerpt=None, score=1.0 / topic_id)


def test_the_fill_draws_on_the_candidates_only_when_the_search_order_chose():
    candidates = [candidate(i) for i in (1, 2, 3, 4)]
    by_search = ResponseState(
        text="q",
        found=found(queries=["q"], topics=candidates),
        selected_topics=[
            picked(1, "vector order (no_model)"),
            picked(2, "vector order (no_model)"),
        ],
        rerank_fallback="no_model",
        selected_by_search_order=True,
    )
    by_model = ResponseState(
        text="q",
        found=found(queries=["q"], topics=candidates),
        selected_topics=[picked(3, "the trip"), picked(1, "the visa")],
        rerank_fallback=None,
        selected_by_search_order=False,
    )

    assert shown_topic_ids(by_search) == [1, 2, 3, 4]
    assert shown_topic_ids(by_model) == [3, 1]  # the model's choice, as the context shows it
    # The ranking metrics (@k, NDCG) still see every candidate after the selection.
    assert ranked_topic_ids(by_model) == [3, 1, 2, 4]
