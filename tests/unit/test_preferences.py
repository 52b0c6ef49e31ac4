"""A request for advice: the user's short stated preferences lead after the standing
instructions (`nodes.response.ranking.preferences`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodes.response.ranking.messages import rank_topic_messages
from nodes.response.ranking.preferences import asks_for_advice, stated_preferences
from nodes.response.ranking.recall import Recall, rank_members
from nodes.response.ranking.weights import Ranking
from tests.support.messages import message_row

REQUESTS = {
    "Where do you think I should work on my essay?": True,
    "Can you help me plan my writing sessions for the upcoming week?": True,
    "How should I structure my cover letter?": True,
    "What tools or software would you suggest I use?": True,
    "What would you recommend for a caching layer?": True,
    "Any tips for my first marathon?": True,
    "Посоветуй, где мне писать эссе": True,
    "Как мне распределить тренировки на неделю?": True,
    "Стоит ли брать лёгкую палатку?": True,
    "Что лучше взять в поход?": True,
    "Что бы ты посоветовал почитать?": True,
    "Can you walk me through how to prove two triangles are congruent?": True,
    "Can you explain, step by step, how to find the probability of two heads?": True,
    "Show me how to set up the cache.": True,
    "Объясни, пожалуйста, как считать вероятность": True,
    "Покажи, как настроить кэш": True,
    "How would you approach building this with Python and spaCy?": True,
    "Как бы ты подошёл к разбору резюме?": True,
    # Questions about what was: no request for advice.
    "How many days passed between my draft and the review?": False,
    "Have I ever used Zotero?": False,
    "What did you recommend for my resume?": False,
    "When did I book the flight?": False,
    "Сколько раз я упоминал кота?": False,
    "Когда я купил палатку?": False,
    "Что мне сказал врач про сон?": False,
    "Can you walk me through the order in which I brought up my plans?": False,
    "Can you explain what a median is?": False,
    "Объясни, что такое медиана": False,
    "How did you approach the parser last time?": False,
    "Как бы то ни было, когда я купил палатку?": False,
}


@pytest.mark.parametrize(("question", "asks"), REQUESTS.items())
def test_a_request_for_advice_is_told_from_a_question_about_what_was(
    question: str, asks: bool
) -> None:
    assert asks_for_advice([question]) is asks


ROWS = [
    message_row(position + 1, position, content, ts=60.0 * (position + 1), role=role)
    for position, (role, content) in enumerate(
        [
            ("user", "I'm drafting my essay this week."),
            ("assistant", "Good luck with the draft."),
            ("user", "I prefer the quiet library's second floor, it has fewer distractions."),
            ("user", "Always give me a checklist at the end."),
            ("user", "I’d rather write in the mornings between 7 and 9."),
            ("user", "I prefer Word, and " + "here is my whole outline. " * 20),
            ("user", "Я предпочитаю писать по утрам."),
            ("user", "Never mind the outline."),
            ("user", "As stated, my preference for pragmatic security still holds."),
        ]
    )
]
NEAR = frozenset(row["id"] for row in ROWS)


def test_the_users_short_stated_preferences_among_the_hits_are_found() -> None:
    # Not the long one (told in passing), not the instruction (a rule already), not the
    # assistant's message, and only among the hits.
    assert stated_preferences(ROWS, NEAR, 300) == {3, 5, 7, 9}
    assert stated_preferences(ROWS, {3, 6}, 300) == {3}
    assert stated_preferences(ROWS, NEAR, 1000) == {3, 5, 6, 7, 9}
    assert stated_preferences(ROWS, NEAR, 0) == frozenset()


def test_preferences_lead_after_the_instructions_within_their_places() -> None:
    topics = [(1, [row["id"] for row in ROWS])]
    hits = [[1, 2, 8, 6, 7, 5, 4, 3]]
    plain = rank_topic_messages(topics, hits, 60, lead=0, rule_lead=3)
    led = rank_topic_messages(topics, hits, 60, lead=0, rule_lead=3, rules={4}, preferences={3, 5})
    assert [m for _, m in led][:3] == [4, 5, 3]
    assert sorted(m for _, m in led[3:]) == sorted(m for _, m in plain if m not in {3, 4, 5})
    # Two places: the instruction and the better-ranked preference.
    two = rank_topic_messages(topics, hits, 60, lead=0, rule_lead=2, rules={4}, preferences={3, 5})
    assert [m for _, m in two][:2] == [4, 5]
    none = rank_topic_messages(topics, hits, 60, lead=0, rule_lead=0, rules={4}, preferences={3})
    assert none == plain


def test_only_a_request_for_advice_lets_the_preferences_lead() -> None:
    def order(question: str, hits: list[int], ranking: Ranking) -> list[int]:
        recall = Recall(queries=[question], text_hits=[hits])
        return [m for _, m in rank_members([(1, ROWS)], recall, ranking)]

    wide = [1, 2, 8, 6, 4, 3, 5, 7]
    advice = order("Where should I write?", wide, Ranking())
    assert advice[0] == 4  # the instruction first, then two of the three preferences
    assert set(advice[1:3]) < {3, 5, 7}
    asked = order("When did I write?", wide, Ranking())
    assert asked[0] == 4 and asked[1:3] == [1, 2]
    # Preferences the hits do not reach stay where they were; so does a profile without them.
    assert order("Where should I write?", [1, 2, 8, 6, 4], Ranking())[1:3] == [1, 2]
    off = Ranking(replace(Ranking().tuning, excerpt_preference_chars=0))
    assert order("Where should I write?", wide, off) == asked
