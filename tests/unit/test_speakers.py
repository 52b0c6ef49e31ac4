"""The speakers a question names (nodes/response/speakers.py), worked out by hand; what
they change: tests/unit/test_excerpt_ranking.py, tests/integration/test_excerpts.py and
tests/integration/test_search_speakers.py."""

from __future__ import annotations

from core.context import ResponseContext
from core.records import Member
from core.tuning import packaged_tuning
from nodes.response.ranking.recall import Recall, speaker_rules
from nodes.response.ranking.speakers import (
    agreed_hits,
    asks_for_answers,
    named_speakers,
    unnamed_authors,
    without_names,
)
from nodes.response.ranking.weights import Ranking


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
    # "What is Melanie's bowl a reminder of?" of a bowl Caroline told about: her message 2
    # is the first full-text and the first vector hit, so it is not left out; 4, by
    # Caroline too, is a full-text hit only and still is.
    members = [
        Member(i, "Melanie" if i % 2 else "Caroline", "user", i, float(i)) for i in (1, 2, 3, 4)
    ]
    question = ["What is Melanie's hand-painted bowl a reminder of?"]
    ranking = Ranking()

    def unnamed(text_hits: list[list[int]], vector_hits: list[list[int]]) -> frozenset[int]:
        recall = Recall(question, text_hits, vector_hits)
        return speaker_rules(ranking, recall, members)["unnamed"]

    assert unnamed([[2, 4]], [[2, 1]]) == {4}
    assert unnamed([[2, 4]], [[1, 3]]) == {2, 4}
    # Agreement within the first `excerpt_lead_hits` of each list: 4 is past them here.
    late = [[100 + place for place in range(packaged_tuning().excerpt_lead_hits)] + [4]]
    assert unnamed(late, [[4]]) == {2, 4}
    off = Ranking.of(ResponseContext(user_id=1).tuned(excerpt_lead_hits=0))
    recall = Recall(question, [[2]], [[2]])
    assert speaker_rules(off, recall, members)["unnamed"] == {2, 4}
