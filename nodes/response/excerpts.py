"""The recalled topics cut to their messages most relevant to a turn (`fill_budget`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.ports import Store
from core.records import MessageRow
from nodes.response.ranking.fill import fill_budget
from nodes.response.ranking.recall import Recall
from nodes.response.ranking.weights import Ranking
from nodes.response.topic_content import excerpt_header, topic_date, topic_header


def relevant_excerpts(
    store: Store,
    user_id: int,
    topic_ids: Sequence[int],
    recall: Recall,
    ranking: Ranking,
    max_chars: int,
    given: Mapping[int, str] | None = None,
) -> tuple[list[int], dict[int, str]]:
    """The user's topics among `topic_ids` filled into `max_chars` (`fill_budget`): the
    topics that keep something, in order, and an excerpt for each shown in part. Ids of
    other users' topics (and unknown ids) are skipped; a topic `given` an excerpt (the
    reranker's) keeps it."""
    given = given or {}
    topics = store.topics.by_ids(user_id, list(dict.fromkeys(topic_ids)))
    headers = {
        topic["id"]: (len(excerpt_header(topic)), len(topic_header(topic))) for topic in topics
    }
    members: list[tuple[int, Sequence[MessageRow]]] = [
        (topic_id, store.messages.of_topic(user_id, topic_id))
        for topic_id in headers
        if topic_id not in given
    ]
    days = {topic["id"]: topic_date(topic) for topic in topics}
    filled = fill_budget(members, headers, recall, ranking, max_chars, given, days)
    return filled.topics, filled.excerpts
