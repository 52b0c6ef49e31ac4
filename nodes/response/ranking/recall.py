"""A turn's recalled messages in the order a context takes them."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from core.found import found_in
from core.ports import Embedder
from core.records import Member, MessageRow
from core.tuning import Tuning
from nodes.response.ranking.feedback import (
    MessageVectors,
    feedback_order,
    feedback_sources,
    wants_feedback,
)
from nodes.response.ranking.messages import (
    by_best_message,
    long_answers,
    message_scores,
    rank_topic_messages,
    replies_after,
    standing_rules,
)
from nodes.response.ranking.passages import (
    Item,
    PassageScores,
    long_messages,
    passage_order,
    passage_scores,
)
from nodes.response.ranking.past import asks_how_many_i, asks_whether_i
from nodes.response.ranking.preferences import asks_for_advice, stated_preferences
from nodes.response.ranking.recap import asks_for_recap, openings, user_first
from nodes.response.ranking.speakers import (
    agreed_hits,
    asks_for_answers,
    unnamed_authors,
    with_prompts,
)
from nodes.response.ranking.summary import naming_first
from nodes.response.ranking.weights import Ranking


def search_queries(text: str, enriched: str | None) -> list[str]:
    """The distinct, non-empty queries of a turn: the raw message first."""
    queries: dict[str, str] = {}
    for query in (text, enriched or ""):
        key = " ".join(query.split()).casefold()
        if key:
            queries.setdefault(key, query.strip())
    return list(queries.values())


@dataclass(frozen=True)
class Recall:
    """What a turn's messages are ranked by: the search's queries (whose speakers they
    name) and evidence (`core.found.Evidence`): full-text hits per query, vector hits
    (a passage hit as its message), the messages written when the question says. With
    `scores`, long messages are shown by their passages most like the queries; with the
    `query` vector and the messages' `vectors`, the ranking takes feedback from its first
    messages (`nodes.response.ranking.feedback`)."""

    queries: Sequence[str] = ()
    text_hits: Sequence[Sequence[int]] = ()
    vector_hits: Sequence[Sequence[int]] = ()
    dated: Sequence[int] = ()
    scores: PassageScores | None = None
    query: np.ndarray | None = field(default=None, compare=False)
    """The queries' mean unit vector (the local embedder's); an array, so left out of the
    generated equality (comparing it would raise)."""
    vectors: MessageVectors | None = None

    @classmethod
    def of(
        cls,
        state: Mapping[str, Any],
        embedder: Embedder | None = None,
        vectors: MessageVectors | None = None,
    ) -> Recall:
        """A response run's recall, from what its search `found`; with `embedder`, its
        passages scored by it, and with the messages' `vectors` too, feedback."""
        found = found_in(state)
        queries, evidence = found["queries"], found["evidence"]
        return cls(
            queries,
            evidence["text_hits"],
            evidence["vector_hits"],
            evidence["dated"],
            passage_scores(embedder, queries) if embedder is not None else None,
            query_vector(embedder, queries) if embedder is not None and vectors else None,
            vectors,
        )


def query_vector(embedder: Embedder, queries: Sequence[str]) -> np.ndarray | None:
    """The unit mean of the queries' vectors; None without queries."""
    if not queries:
        return None
    mean = np.mean([embedder.encode_query(query) for query in dict.fromkeys(queries)], axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else None


def speaker_rules(ranking: Ranking, queries: Sequence[str], members: Sequence[Member]) -> dict:
    """`message_scores`' `unnamed` and `replies` for `members` (the ranked messages): the
    hits that only lend their share (`unnamed_authors`, unless `excerpt_named_speakers`
    is off) and the replies a hit's share reaches across a topic's bound (`replies_after`)."""
    authors = {member.id: member.author for member in members}
    named = ranking.tuning.excerpt_named_speakers
    return {
        "unnamed": unnamed_authors(queries, authors) if named else frozenset(),
        "replies": replies_after(members, ranking),
    }


def order_topics(
    members: Mapping[int, Sequence[Member]],
    fused: Sequence[int],
    recall: Recall,
    ranking: Ranking,
) -> list[tuple[int, float]]:
    """The `fused` topics (best first by fused score) ordered by their best message, each
    with that message's score; `members` are their messages (a topic absent there has
    none and comes last). No hit leads: leading is a rule for filling a budget."""
    ids = [(topic_id, [member.id for member in members.get(topic_id, ())]) for topic_id in fused]
    found = [member for topic_id in fused for member in members.get(topic_id, ())]
    score, _ = message_scores(
        ids,
        recall.text_hits,
        ranking.tuning.rrf_k,
        vector_lists=recall.vector_hits,
        dated=recall.dated,
        **speaker_rules(ranking, recall.queries, found),
        **ranking.score_weights(),
    )
    return by_best_message(ids, score)


def rank_members(
    members: Sequence[tuple[int, Sequence[MessageRow]]],
    recall: Recall,
    ranking: Ranking,
    cut: Collection[int] = frozenset(),
) -> list[tuple[int, int]]:
    """(topic id, message id) of every message of `members` (topics, best first, with
    their messages in conversation order), most relevant first (`rank_topic_messages`).
    A long answer among `cut` (shown by passages) keeps its rank when
    `excerpt_passages_in_place` says so; every long answer keeps it when the queries ask
    what the assistant said (`asks_for_answers`). The user's standing instructions among
    the first `message_hits_count` of each hit list lead, and so does the one most like
    the queries (when `recall` scores passages), unless the question asks whether or how
    often the user did something (`leading_rules`); for a request for advice their
    stated preferences after them (`advice_preferences`).
    When the queries ask what the assistant said, each answer comes with the user's
    message it answered (`with_prompts`); for a summary request or a yes/no question about
    the user's past naming someone, the user's messages naming them come right after those
    that lead (`naming_first`). A hit by an author the queries leave out only lends its
    neighbours their share (`speaker_rules`), unless both the full-text and the vector hits
    rank it among their first `excerpt_lead_hits` (`agreed_hits`: a question can name the
    wrong speaker); the search's topic order (`order_topics`) makes no such exception: a
    question asked of the named person does not lift its topic."""
    rows = [m for _, messages in members for m in messages]
    depth = ranking.tuning.message_hits_count
    near = {i for hits in (*recall.text_hits, *recall.vector_hits) for i in hits[:depth]}
    answers = closing_answers(rows, recall.queries, ranking.tuning, cut)
    asked_answers = asks_for_answers(recall.queries)
    speakers = speaker_rules(ranking, recall.queries, [Member.of(m) for m in rows])
    if speakers["unnamed"]:
        lead = ranking.tuning.excerpt_lead_hits
        agreed = agreed_hits(recall.text_hits, recall.vector_hits, lead)
        speakers["unnamed"] = speakers["unnamed"] - agreed
    rules = leading_rules(rows, near, recall, ranking.tuning)
    preferences = (
        advice_preferences(rows, near, recall.scores, ranking.tuning)
        if asks_for_advice(recall.queries)
        else frozenset()
    )
    ranked = rank_topic_messages(
        [(topic_id, [m["id"] for m in messages]) for topic_id, messages in members],
        recall.text_hits,
        ranking.tuning.rrf_k,
        vector_lists=recall.vector_hits,
        dated=recall.dated,
        **speakers,
        **ranking.weights(),
        answers=answers,
        rules=rules,
        preferences=preferences,
    )
    if asked_answers:
        ranked = with_prompts(ranked, speakers["replies"], {m["id"]: m["role"] for m in rows})
    return naming_first(ranked, rows, recall.queries, leading=rules | preferences)


def leading_rules(
    rows: Sequence[MessageRow], near: Collection[int], recall: Recall, tuning: Tuning
) -> frozenset[int]:
    """The user's standing instructions that lead the turn's order: those among `near`
    (the first hits of the turn's lists, `standing_rules`) and the one most like the
    queries (`likeliest_rule`). None for a question about the user's own past, yes/no
    (`asks_whether_i`: "Have I ever worked on medians?", "Делал ли я бэкап?") or a count
    (`asks_how_many_i`: "How many classification problems have I completed?", "Сколько
    задач я решил?"): an instruction shapes the answers to the requests it names ("… when
    I ask about triangle classification methods"), while such a question is answered by
    the mentions of what it asks about, and a small context has room for few of them."""
    if asks_whether_i(recall.queries) or asks_how_many_i(recall.queries):
        return frozenset()
    return standing_rules(rows, near) | likeliest_rule(
        rows, recall.scores, tuning.message_vector_floor
    )


def advice_preferences(
    rows: Sequence[MessageRow],
    near: Collection[int],
    scores: PassageScores | None,
    tuning: Tuning,
) -> frozenset[int]:
    """The stated preferences that lead a request for advice: the user's short ones among
    `near` (`stated_preferences`), and the one most like the queries (`likeliest`) of any
    length a message is shown whole at (up to `excerpt_long_answer_chars`). A preference
    is often told on the way to a request ("I'm trying to keep my app lightweight, so I
    prefer minimal dependencies, how can I …"), in a message longer than the short ones
    that lead by being hits; its likeness to the request still tells it apart."""
    stated = stated_preferences(rows, near, tuning.excerpt_preference_chars)
    if tuning.excerpt_preference_chars <= 0:
        return stated
    every = frozenset(row["id"] for row in rows)
    told = stated_preferences(rows, every, tuning.excerpt_long_answer_chars)
    found = [row for row in rows if row["id"] in told]
    return stated | likeliest(found, scores, tuning.message_vector_floor)


def closing_answers(
    rows: Iterable[MessageRow],
    queries: Sequence[str],
    tuning: Tuning,
    cut: Collection[int] = frozenset(),
) -> frozenset[int]:
    """The assistant's long answers among `rows` that close the order (`long_answers`):
    none when the queries ask what the assistant said (`asks_for_answers`), and without
    those among `cut` (shown by passages) when `excerpt_passages_in_place` keeps their
    best passage at their rank."""
    if asks_for_answers(queries):
        return frozenset()
    answers = long_answers(rows, tuning)
    return answers - frozenset(cut) if tuning.excerpt_passages_in_place else answers


def likeliest_rule(
    rows: Sequence[MessageRow], scores: PassageScores | None, floor: float
) -> frozenset[int]:
    """The user's standing instruction among `rows` (`standing_rules`' kind) most like the
    turn's queries by `scores` (`likeliest`).

    An instruction says when it applies ("… when I ask about triangle area calculations")
    in words the question seldom shares ("How can I find the area of a triangle using
    medians?"), so among the many messages on the subject it may be no hit the turn's
    lists rank near the top; its likeness to the question still tells it apart from the
    user's other instructions. Only the likeliest one: the others would take a small
    budget's room from the evidence."""
    found = standing_rules(rows, frozenset(row["id"] for row in rows))
    return likeliest([row for row in rows if row["id"] in found], scores, floor)


def likeliest(
    rows: Sequence[MessageRow], scores: PassageScores | None, floor: float
) -> frozenset[int]:
    """The one of `rows` most like the turn's queries by `scores` (the local embedder's
    cosine), when that likeness reaches `floor` (the embedder's calibrated
    `message_vector_floor`: the cosine an unrelated question's nearest message stays
    under); none without `scores` or `rows`."""
    if scores is None or not rows:
        return frozenset()
    likeness = list(scores([row["content"] for row in rows]))
    best = max(range(len(rows)), key=lambda index: likeness[index])
    return frozenset({rows[best]["id"]}) if likeness[best] >= floor else frozenset()


def rank_items(
    members: Sequence[tuple[int, Sequence[MessageRow]]], recall: Recall, ranking: Ranking
) -> tuple[list[Item], dict[int, list[str]]]:
    """`rank_members`' order with long messages shown by passages (`passage_order`, scored
    by `recall.scores`; None: every message whole), and those passages. A question about
    what the user brought up (`asks_for_recap`) gets the user's messages first, each long
    one by its opening (`nodes.response.ranking.recap`)."""
    tuning = ranking.tuning
    rows = {m["id"]: m for _, messages in members for m in messages}
    scores = recall.scores
    passages = (
        long_messages(rows, tuning.excerpt_long_answer_chars, tuning.excerpt_passage_chars)
        if scores is not None
        else {}
    )
    recap = closing = frozenset[int]()
    ranked = rank_members(members, recall, ranking, cut=frozenset(passages))
    if (fed := with_feedback(rows, recall, tuning, [m for _, m in ranked])) is not None:
        ranked = rank_members(members, fed, ranking, cut=frozenset(passages))
    if scores is not None and tuning.excerpt_recap_chars > 0 and asks_for_recap(recall.queries):
        digest = openings(rows, tuning.excerpt_recap_chars)
        passages.update(digest)
        recap = frozenset(digest)
        closing = closing_answers(rows.values(), recall.queries, tuning, passages)
        ranked = user_first(ranked, rows)
    if not passages or scores is None:
        return [(topic_id, message_id, None) for topic_id, message_id in ranked], {}
    return passage_order(ranked, passages, scores, recap, closing), passages


def with_feedback(
    rows: Mapping[int, MessageRow], recall: Recall, tuning: Tuning, ranked: Sequence[int]
) -> Recall | None:
    """`recall` with one more vector list: the recalled messages (`rows`) by their likeness
    to the query moved toward the first of `ranked` (`nodes.response.ranking.feedback`);
    None without the vectors, with feedback off, for a question it does not serve
    (`wants_feedback`), or with no message to take it from."""
    if recall.query is None or recall.vectors is None or tuning.excerpt_feedback_messages <= 0:
        return None
    if not wants_feedback(recall.queries):
        return None
    every = frozenset(rows)
    leading = standing_rules(rows.values(), every) | stated_preferences(
        rows.values(), every, tuning.excerpt_preference_chars
    )
    sources = feedback_sources(ranked, rows, leading, tuning)
    order = feedback_order(recall.query, list(rows.values()), sources, recall.vectors, tuning)
    return replace(recall, vector_hits=[*recall.vector_hits, order]) if order else None
