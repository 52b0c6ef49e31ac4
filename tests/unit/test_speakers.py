"""The speakers a question names (nodes/response/speakers.py), worked out by hand; what
they change: tests/unit/test_excerpt_ranking.py, tests/integration/test_excerpts.py and
tests/integration/test_search_speakers.py."""

from __future__ import annotations

from core.context import ResponseContext
from core.tuning import packaged_tuning
from nodes.response.ranking.recall import Recall, rank_members
from nodes.response.ranking.speakers import (
    agreed_hits,
    asks_for_answers,
    named_speakers,
    unnamed_authors,
    without_names,
)
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row


def test_the_speakers_a_question_names() -> None:
    authors = {1: "Melanie", 2: "Caroline", 3: "Melanie", 4: None, 5: "Caroline"}
    assert unnamed_authors(["What has Melanie painted?"], authors) == {2, 5}
    assert unnamed_authors(["Where are Melanie's kids?"], authors) == {2, 5}
    # Named by the enriched query only.
    assert unnamed_authors(["What did she paint?", "Caroline painting"], authors) == {1, 3}
    # Every speaker named, or none: nobody is left out.
    assert unnamed_authors(["What do Melanie and Caroline both paint?"], authors) == set()
    assert unnamed_authors(["What was painted at the lake?"], authors) == set()
    assert unnamed_authors([], authors) == set()
    # One speaker only: naming them leaves nobody out.
    assert unnamed_authors(["What did Melanie say?"], {1: "Melanie", 2: None}) == set()
    # Russian endings, a full name by one of its words, function words are no names.
    russian = {1: "Каролина", 2: "Мелани", 3: "Каролина"}
    assert unnamed_authors(["Что подарили Каролине на день рождения?"], russian) == {2}
    full = {1: "John Smith", 2: "Maria Lopez"}
    assert unnamed_authors(["When did Smith move?"], full) == {2}
    assert unnamed_authors(["What is it?"], {1: "It", 2: "Maria"}) == set()
    # Only a capitalised word names someone: "max" is a word, "Max" a name.
    chat = {1: "Max", 2: "Topica", 3: "Max"}
    assert unnamed_authors(["What was the max dose you told me?"], chat) == set()
    assert unnamed_authors(["What did Max ask about the dose?"], chat) == {2}
    assert unnamed_authors(["what has melanie painted?"], authors) == set()
    assert named_speakers(["What has Melanie painted?"], authors.values()) == {"Melanie"}


def test_a_query_without_the_names_it_gives() -> None:
    assert without_names("What has Melanie painted?", ["Melanie"]) == "What has painted?"
    assert without_names("Where are Melanie's kids?", ["Melanie"]) == "Where are kids?"
    assert without_names("Куда Каролина ездила летом?", ["Каролина"]) == "Куда ездила летом?"
    # A full name goes word by word, whichever words the question uses.
    assert without_names("When did John Smith move?", ["John Smith"]) == "When did move?"
    # Nothing named, or nothing but the name and function words left: no other query.
    assert without_names("What has Caroline painted?", ["Melanie"]) is None
    assert without_names("Who is Melanie?", ["Melanie"]) is None
    assert without_names("Melanie", ["Melanie"]) is None
    # A word written in lower case stays: it is not the name.
    assert without_names("What did Max say about the max dose?", ["Max"]) == (
        "What did say about the max dose?"
    )


def test_a_question_about_what_the_assistant_said() -> None:
    for asked in (
        "What did you recommend for the rate limit?",
        "How did you suggest I structure the first sprint?",
        "You mentioned a library for retries: which one?",
        "Что ты мне советовал про сон?",
        "Что вы говорили о бюджете?",
    ):
        assert asks_for_answers([asked]), asked
    for own in (
        "What would you suggest for the rate limit?",  # a request for new advice
        "What did I mention about sprints?",
        "Ты помнишь, что я говорил про сон?",  # the user's words
        "Что ты посоветуешь?",
    ):
        assert not asks_for_answers([own]), own
    assert asks_for_answers(["the rate limit", "what did you recommend"])  # either query
    assert not asks_for_answers([])


def test_the_hits_both_lists_rank_first() -> None:
    # 5 is among the first two full-text hits of one query and the first two vector hits.
    assert agreed_hits([[5, 1, 2], [9, 8]], [[3, 5, 1]], 2) == {5}
    # 1 is third in the vector list: past the depth; at depth 3 it agrees too.
    assert agreed_hits([[5, 1, 2]], [[3, 5, 1]], 3) == {5, 1}
    # Any full-text list and any vector list: 8 is second in the second of each.
    assert agreed_hits([[5], [9, 8]], [[3], [4, 8]], 2) == {8}
    assert agreed_hits([[5, 1]], [[3, 4]], 2) == frozenset()
    assert agreed_hits([[5, 1]], [[5, 1]], 0) == frozenset()
    assert agreed_hits([], [[5]], 3) == frozenset()


def test_a_hit_both_lists_put_first_counts_whoever_the_question_names() -> None:
    # "What is Melanie's bowl a reminder of?" of a bowl Caroline told about (message 2).
    texts = [
        "That necklace is gorgeous! Anything else you treasure?",
        "My hand-painted bowl, a friend made it; it reminds me of art.",
        "Lovely. I took my family camping last week.",
        "Camping sounds great, did the kids enjoy it?",
    ]
    authors = ["Melanie", "Caroline", "Melanie", "Caroline"]
    rows = [
        message_row(i + 1, i, text, float(i), role="user", author=author)
        for i, (text, author) in enumerate(zip(texts, authors, strict=True))
    ]
    question = ["What is Melanie's hand-painted bowl a reminder of?"]

    def order(text_hits: list[list[int]], vector_hits: list[list[int]], **tuned: int) -> list[int]:
        ranking = Ranking.of(ResponseContext(user_id=1).tuned(**tuned))
        recall = Recall(question, text_hits, vector_hits)
        return [m for _, m in rank_members([(7, rows)], recall, ranking)]

    # The first full-text and the first vector hit: it leads, whoever wrote it.
    assert order([[2, 4]], [[2, 1]])[0] == 2
    # A full-text hit only, one past the first `excerpt_lead_hits` of the full-text list,
    # or agreement with no lead at all: Caroline's line lends its neighbours their share
    # and comes after them.
    late = [[100 + place for place in range(packaged_tuning().excerpt_lead_hits)] + [2, 4]]
    for left_out in (
        order([[2, 4]], [[1, 3]]),
        order(late, [[2, 1]]),
        order([[2, 4]], [[2, 1]], excerpt_lead_hits=0),
    ):
        assert left_out.index(2) > left_out.index(1) and left_out.index(2) > left_out.index(3)
