"""Questions naming a day or a month, on a real store (the date forms themselves:
tests/unit/test_dates.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core.context import ResponseContext
from core.deps import Deps
from core.records import parse_timestamp
from core.state import SelectedTopic
from nodes.response.assemble import recalled_sections
from nodes.response.hits import dated_messages
from nodes.response.search import hybrid_search
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)

DAY = datetime.fromisoformat("2022-11-09T10:00:00+00:00")

GARDEN = [
    "I planted tomatoes and basil in the garden this morning.",
    "Great, tomatoes like the sunny side of the garden.",
    "The soil near the fence is very dry though.",
    "Mulch helps the soil keep water in summer.",
]
COOKING = [
    "Tonight I tried a coconut ice cream recipe for the first time.",
    "How did it turn out?",
    "Creamy, but the sprinkles changed its colour.",
    "Next time add them just before serving.",
]
READING = [
    "I finished the novel about the lighthouse keeper.",
    "Did the ending surprise you?",
]


def store_days(deps: Deps, user_id: int) -> dict[str, list[int]]:
    """Garden talk on 8 November 2022, cooking on the 9th, reading on 3 December; each
    day archived as one topic."""
    found: dict[str, list[int]] = {}
    for name, lines, start in (
        ("garden", GARDEN, DAY - timedelta(days=1)),
        ("cooking", COOKING, DAY),
        ("reading", READING, DAY + timedelta(days=24)),
    ):
        rows = deps.indexer.store_messages(
            user_id, new_messages(lines, start=start, prefix=f"{name}-")
        )
        found[name] = [row["id"] for row in rows]
        deps.store.topics.save(user_id, [(name.title(), found[name])])
    return found


def context(**fields) -> ResponseContext:
    return ResponseContext(**{"user_id": USER, "now_iso": "2023-01-10T12:00:00+00:00", **fields})


def test_messages_written_in_a_period_are_the_users_archived_ones_in_order(deps: Deps) -> None:
    mine = store_days(deps, USER)
    store_days(deps, OTHER)
    unarchived = deps.indexer.store_messages(
        USER, new_messages(["Still cooking?"], start=DAY + timedelta(hours=5), prefix="late-")
    )
    start, end = DAY.replace(hour=0), DAY.replace(hour=0) + timedelta(days=1)
    messages = deps.store.messages
    assert messages.written_between(USER, start.timestamp(), end.timestamp(), 50) == mine["cooking"]
    assert unarchived[0]["id"] not in messages.written_between(
        USER, start.timestamp(), end.timestamp(), 50
    )
    assert (
        messages.written_between(USER, start.timestamp(), end.timestamp(), 2) == mine["cooking"][:2]
    )
    month = messages.written_between(
        USER, datetime(2022, 11, 1, tzinfo=DAY.tzinfo).timestamp(), end.timestamp() + 86400, 50
    )
    assert month == mine["garden"] + mine["cooking"]
    assert all(
        parse_timestamp(row["created_at"]) >= start for row in messages.by_ids(USER, month[4:])
    )


def test_the_messages_of_a_named_day_with_the_ones_the_question_matches_first(
    deps: Deps,
) -> None:
    days = store_days(deps, USER)
    cooking = days["cooking"]
    question = "What did I make on 9 November 2022?"
    # Without other lists: the day's messages in the order they were written.
    assert dated_messages(deps.store, context(), [question], []) == cooking
    # A message the other lists found comes first, by its best rank there.
    assert dated_messages(deps.store, context(), [question], [[99, cooking[2]]]) == [
        cooking[2],
        cooking[0],
        cooking[1],
        cooking[3],
    ]
    assert (
        dated_messages(deps.store, context().tuned(message_hits_count=1), [question], [])
        == cooking[:1]
    )
    # A day without messages, or no date at all: nothing.
    assert dated_messages(deps.store, context(), ["What did I make on 1 May 2021?"], []) == []
    assert dated_messages(deps.store, context(), ["What did I make?"], []) == []
    # A month, and a day without its year (the latest before the turn's moment).
    assert dated_messages(deps.store, context(), ["в ноябре 2022"], []) == [
        *days["garden"],
        *cooking,
    ]
    assert dated_messages(deps.store, context(), ["on 3 December"], []) == days["reading"]


def test_a_question_naming_a_day_recalls_that_days_topic(deps: Deps) -> None:
    days = store_days(deps, USER)
    store_days(deps, OTHER)
    # No word of the question is in the cooking talk: the date alone finds it.
    found = hybrid_search(deps, context(), ["What did we talk about on 9 November 2022?"])["found"]
    cooking = deps.store.messages.topics_of(USER, days["cooking"][:1])[days["cooking"][0]]
    assert found["topics"][0]["id"] == cooking
    # The day's messages, those the vector lists found first.
    assert sorted(found["evidence"]["dated"]) == days["cooking"]
    (vectors,) = found["evidence"]["vector_hits"]
    assert found["evidence"]["dated"][0] == next(i for i in vectors if i in days["cooking"])
    # The same words with another day recall that day's topic; without a date, no list.
    for day, name in (("8 November 2022", "garden"), ("3 December 2022", "reading")):
        other = hybrid_search(deps, context(), [f"What did we talk about on {day}?"])["found"]
        first = other["topics"][0]["id"]
        assert deps.store.topics.by_ids(USER, [first])[0]["start_msg_id"] == days[name][0]
    plain = hybrid_search(deps, context(), ["What did we talk about?"])["found"]
    assert plain["evidence"]["dated"] == []


def test_a_day_counted_back_from_the_turn_recalls_that_days_topic(deps: Deps) -> None:
    days = store_days(deps, USER)
    store_days(deps, OTHER)
    # The turn is the day after the cooking talk, and a week after the reading one's week.
    after = {"now_iso": (DAY + timedelta(days=1, hours=2)).isoformat()}
    topic_of = {
        name: deps.store.messages.topics_of(USER, ids[:1])[ids[0]] for name, ids in days.items()
    }
    for question, name in (
        ("What did we talk about yesterday?", "cooking"),
        ("О чём мы говорили вчера?", "cooking"),
        ("What did we talk about the day before yesterday?", "garden"),
        ("Что мы обсуждали позавчера?", "garden"),
    ):
        found = hybrid_search(deps, context(**after), [question])["found"]
        assert found["topics"][0]["id"] == topic_of[name], question
        assert sorted(found["evidence"]["dated"]) == days[name], question
    # Reading was on Saturday 3 December 2022; on Tuesday the 6th that is last week.
    later = {"now_iso": "2022-12-06T09:00:00+00:00"}
    for question in ("What did we discuss last week?", "Что мы обсуждали на прошлой неделе?"):
        found = hybrid_search(deps, context(**later), [question])["found"]
        assert found["topics"][0]["id"] == topic_of["reading"], question
        assert sorted(found["evidence"]["dated"]) == days["reading"], question
    # "Today" names no past period: no list.
    today = hybrid_search(deps, context(**after), ["What do we do today?"])["found"]
    assert today["evidence"]["dated"] == []


def test_the_context_keeps_the_named_days_messages_when_topics_do_not_fit(deps: Deps) -> None:
    days = store_days(deps, USER)
    question = "What did I make on 9 November 2022?"
    found = hybrid_search(deps, context(), [question])["found"]
    topic_of = deps.store.messages.topics_of(USER, [days["garden"][0], days["cooking"][0]])
    state = {
        "text": question,
        # The garden topic first: a whole first topic would fill the room.
        "selected_topics": [
            SelectedTopic(id=topic_of[days["garden"][0]], reason="garden", excerpt=None, score=1),
            SelectedTopic(id=topic_of[days["cooking"][0]], reason="food", excerpt=None, score=0.5),
        ],
        "found": {
            **found,
            "evidence": {**found["evidence"], "text_hits": [[]], "vector_hits": []},
        },
    }
    small = context().budgeted(topics=140)
    shown = dict(recalled_sections(deps.store, USER, state, set(), small))["topics"].text
    assert any(line in shown for line in COOKING)
    assert not any(line in shown for line in GARDEN)
    blind = dict(
        recalled_sections(
            deps.store,
            USER,
            {**state, "found": {**found, "evidence": {**state["found"]["evidence"], "dated": []}}},
            set(),
            small,
        )
    )
    assert any(line in blind["topics"].text for line in GARDEN)
    assert not any(line in blind["topics"].text for line in COOKING)
