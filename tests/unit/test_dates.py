"""The days and months a question names (nodes/response/dates.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from nodes.response.ranking.dates import month_number, named_periods

NOW = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def days(text: str, now: datetime = NOW) -> list[tuple[str, int]]:
    """(first day, length in days) of each period `text` names."""
    return [
        (start.date().isoformat(), (end - start).days) for start, end in named_periods(text, now)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Days and months named with their year.
        ("What dish did Nate make on 9 November, 2022?", [("2022-11-09", 1)]),
        ("What did he show me on October 13, 2023?", [("2023-10-13", 1)]),
        ("on the 9th of November 2022", [("2022-11-09", 1)]),
        ("Nov. 9th 2022", [("2022-11-09", 1)]),
        ("Что я рассказывал 9 ноября 2022 года?", [("2022-11-09", 1)]),
        ("Что было 1 мая 2023", [("2023-05-01", 1)]),
        ("2022-11-09", [("2022-11-09", 1)]),
        ("встреча 09.11.2022 в 10.30", [("2022-11-09", 1)]),
        ("What did John share in January 2024?", [("2024-01-01", 31)]),
        ("Was the first half of September 2022 good?", [("2022-09-01", 30)]),
        ("Что было в марте 2023 года?", [("2023-03-01", 31)]),
        ("февраль 2024", [("2024-02-01", 29)]),
        ("in may 2023", [("2023-05-01", 31)]),
        # Days, weeks, months and years counted back from the turn.
        ("What did I say yesterday?", [("2024-02-29", 1)]),
        ("yesterday's talk", [("2024-02-29", 1)]),
        ("the day before yesterday", [("2024-02-28", 1)]),
        ("3 days ago", [("2024-02-27", 1)]),
        ("two days ago", [("2024-02-28", 1)]),
        ("a week ago", [("2024-02-19", 7)]),  # weeks begin on Monday; NOW is a Friday
        ("last week", [("2024-02-19", 7)]),
        ("2 weeks ago", [("2024-02-12", 7)]),
        ("last month", [("2024-02-01", 29)]),
        ("three months ago", [("2023-12-01", 31)]),
        ("last year", [("2023-01-01", 365)]),
        ("Last Friday", [("2024-02-23", 1)]),  # not today, a Friday itself
        ("last Thursday", [("2024-02-29", 1)]),
        ("Что я говорил вчера?", [("2024-02-29", 1)]),
        ("вчерашний разговор", [("2024-02-29", 1)]),
        ("позавчера", [("2024-02-28", 1)]),
        ("три дня назад", [("2024-02-27", 1)]),
        ("пару дней назад", [("2024-02-28", 1)]),
        ("неделю назад", [("2024-02-19", 7)]),
        ("2 недели назад", [("2024-02-12", 7)]),
        ("на прошлой неделе", [("2024-02-19", 7)]),
        ("месяц назад", [("2024-02-01", 29)]),
        ("в прошлом месяце", [("2024-02-01", 29)]),
        ("в прошлом году", [("2023-01-01", 365)]),
        ("5 лет назад", [("2019-01-01", 365)]),
        ("в прошлую пятницу", [("2024-02-23", 1)]),
        ("в прошлую среду", [("2024-02-28", 1)]),
        ("в прошлый понедельник", [("2024-02-26", 1)]),
    ],
)
def test_named_and_counted_back_periods_in_english_and_russian(text: str, expected: list) -> None:
    """Days and months named with their year, and periods counted back from the turn."""
    assert days(text) == expected


def test_a_day_without_its_year_is_the_latest_one_not_after_now() -> None:
    assert days("What did I say on 9 November?") == [("2023-11-09", 1)]
    assert days("Что я говорил 1 марта?") == [("2024-03-01", 1)]
    assert days("Что я говорил 2 марта?") == [("2023-03-02", 1)]
    assert days("on February 29") == [("2024-02-29", 1)]
    assert days("on February 29", NOW.replace(year=2025)) == [("2024-02-29", 1)]


def test_counting_back_crosses_years_and_only_the_past_is_read() -> None:
    january = datetime(2024, 1, 15, 9, 0, tzinfo=UTC)
    assert days("last month", january) == [("2023-12-01", 31)]
    assert days("2 months ago", january) == [("2023-11-01", 30)]
    assert days("yesterday", datetime(2024, 1, 1, 9, tzinfo=UTC)) == [("2023-12-31", 1)]
    for text in (
        "What do I have today?",
        "this week",
        "next week",
        "on Monday",
        "в понедельник",
        "через неделю",
        "сегодня",
        "the last day of school",
        "the last week of the trip",
        "last weekend plans",
    ):
        assert days(text) == [], text


def test_what_is_not_a_date() -> None:
    assert days("I may 5 times be wrong") == []  # an English month is capitalised
    assert days("Where was I in December?") == []  # a month needs its year
    assert days("It costs 12.50 and took 3 hours") == []
    assert days("version 2022-13-45") == []
    assert days("31 February 2023") == [("2023-02-01", 28)]  # no such day: the month


def test_periods_keep_their_order_lose_repeats_and_live_in_the_turns_time_zone() -> None:
    assert days("9 November 2022 or 2022-11-09, then March 2023") == [
        ("2022-11-09", 1),
        ("2023-03-01", 31),
    ]
    moscow = timezone(timedelta(hours=3))
    ((start, end),) = named_periods("on 9 November 2022", NOW.astimezone(moscow))
    assert start == datetime(2022, 11, 9, tzinfo=moscow) and end - start == timedelta(days=1)
    assert start.astimezone(UTC).date() == date(2022, 11, 8)


def test_month_names() -> None:
    assert [month_number(name) for name in ("Jan", "may", "Sept", "December")] == [1, 5, 9, 12]
    assert [month_number(name) for name in ("мая", "марте", "августа", "январь")] == [5, 3, 8, 1]
