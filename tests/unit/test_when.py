"""Reading "when" in Russian and English: relative, absolute and recurring times in the
user's zone, `<when> <what>` split apart, and what cannot be read refused with examples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.when import EXAMPLES, WhenError, next_run, parse_when, split_request
from tests.support.tables import rows

NOW = datetime(2026, 11, 26, 19, 0, tzinfo=UTC)  # a Thursday, 22:00 in Moscow
MOSCOW = "Europe/Moscow"


def local(when_text: str, zone: str = MOSCOW) -> tuple[str, str | None]:
    found = parse_when(when_text, NOW, zone)
    assert found.first_run > NOW
    return found.first_run.strftime("%Y-%m-%d %H:%M:%S %Z"), found.rule


@pytest.mark.parametrize(
    ("text", "expected"),
    rows("""
        через 10 секунд    | 2026-11-26 22:00:10 MSK
        in 10 minutes      | 2026-11-26 22:10:00 MSK
        через 2 часа       | 2026-11-27 00:00:00 MSK
        завтра в 9:00      | 2026-11-27 09:00:00 MSK
        on Friday at 18:30 | 2026-11-27 18:30:00 MSK
        25 декабря         | 2026-12-25 09:00:00 MSK
        завтра             | 2026-11-27 09:00:00 MSK
        tomorrow at 9      | 2026-11-27 09:00:00 MSK
    """),
)
def test_one_time(text: str, expected: str):
    assert local(text) == (expected, None)


@pytest.mark.parametrize(
    ("text", "first", "rule"),
    rows("""
        каждый день в 9:00     | 2026-11-27 09:00:00 | FREQ=DAILY;BYHOUR=9;BYMINUTE=0
        every day at 21:30     | 2026-11-27 21:30:00 | FREQ=DAILY;BYHOUR=21;BYMINUTE=30
        every Monday at 10     | 2026-11-30 10:00:00 | FREQ=WEEKLY;BYDAY=MO;BYHOUR=10;BYMINUTE=0
        каждую пятницу в 18:30 | 2026-11-27 18:30:00 | FREQ=WEEKLY;BYDAY=FR;BYHOUR=18
        по будням в 8          | 2026-11-27 08:00:00 | FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8
        ежедневно              | 2026-11-27 09:00:00 | FREQ=DAILY;BYHOUR=9;BYMINUTE=0
    """),
)
def test_recurring(text: str, first: str, rule: str):
    when_text, found_rule = local(text)
    assert when_text == first + " MSK"
    assert found_rule.startswith(rule) and found_rule.endswith("BYSECOND=0")


def test_times_are_read_in_the_users_zone():
    assert local("завтра в 9:00", "UTC") == ("2026-11-27 09:00:00 UTC", None)
    assert parse_when("завтра в 9:00", NOW, MOSCOW).first_run == datetime(
        2026, 11, 27, 6, 0, tzinfo=UTC
    )


def test_a_recurring_task_skips_missed_times():
    rule = parse_when("каждый день в 9:00", NOW, MOSCOW).rule
    three_days_late = NOW + timedelta(days=3)

    following = next_run(rule, MOSCOW, three_days_late)

    assert following.astimezone(UTC) == datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
    assert next_run(rule, MOSCOW, following) == following + timedelta(days=1)
    weekdays = parse_when("по будням в 8", NOW, MOSCOW).rule
    friday = next_run(weekdays, MOSCOW, NOW)
    assert next_run(weekdays, MOSCOW, friday).strftime("%a %H:%M") == "Mon 08:00"


@pytest.mark.parametrize(
    ("text", "when_text", "what"),
    rows("""
        через 5 секунд выпить воды         | 2026-11-26 22:00:05 MSK | выпить воды
        завтра в 9:00 позвонить маме       | 2026-11-27 09:00:00 MSK | позвонить маме
        in 10 minutes Call Mom             | 2026-11-26 22:10:00 MSK | Call Mom
        каждый день в 9 пить таблетки      | 2026-11-27 09:00:00 MSK | пить таблетки
        every Monday at 10 send the report | 2026-11-30 10:00:00 MSK | send the report
        по будням в 8 зарядка              | 2026-11-27 08:00:00 MSK | зарядка
    """),
)
def test_when_and_what_are_split(text: str, when_text: str, what: str):
    found, request = split_request(text, NOW, MOSCOW)
    assert (found.first_run.strftime("%Y-%m-%d %H:%M:%S %Z"), request) == (when_text, what)


@pytest.mark.parametrize(
    "text", ["blah", "", "   ", "every blah", "каждый ерунда", "в 25:99", "позвонить маме"]
)
def test_unreadable_times_give_two_examples(text: str):
    with pytest.raises(WhenError) as error:
        parse_when(text, NOW, MOSCOW)
    assert all(example in str(error.value) for example in EXAMPLES)


def test_past_times_missing_requests_and_unknown_zones_are_refused():
    with pytest.raises(WhenError, match="past"):
        parse_when("вчера", NOW, MOSCOW)
    with pytest.raises(WhenError, match="remind"):
        split_request("через 10 минут", NOW, MOSCOW)
    with pytest.raises(WhenError, match="unknown time zone"):
        parse_when("через 10 минут", NOW, "Mars/Olympus")
    with pytest.raises(WhenError):
        split_request("позвонить маме завтра", NOW, MOSCOW)
