"""The days and months a question names: "What did Nate cook on 9 November, 2022?",
"Что я рассказывал 9 ноября?", "in January 2024", "в марте 2023 года", "2022-11-09".

A date in a question says when the thing asked about was said, so the messages written
then are candidates whatever their words: `dated_messages` reads them, and the search's
topic votes and the excerpts' ranking take them as one more list
(`nodes.response.search`, `nodes.response.excerpts`).

Recognised, in English and Russian, with the month written out (English abbreviations
too): a day with its year ("9 November 2022", "November 9th, 2022", "9 ноября 2022
года"), a day without one ("on 9 November", "9 ноября": the latest such day not after
the turn's moment), a month with its year ("November 2022", "в ноябре 2022"), and the
numeric forms `2022-11-09` and `09.11.2022`. A month without a year is left alone, and
an English day without one needs its month capitalised: "may" is mostly a verb.

Days, weeks, months and years counted back from the turn's day are read too
(`relative_periods`): "yesterday", "the day before yesterday", "3 days ago", "a week
ago", "last week", "last month", "last year", "last Friday"; "вчера", "позавчера",
"три дня назад", "неделю назад", "на прошлой неделе", "в прошлом месяце", "в прошлом
году", "в прошлую пятницу". Only the past is read: "today", "this week" or "on Monday"
say as often what is to come as what was said. Weeks begin on Monday.

Periods are days and months of the turn's own time zone, as half-open [start, end)
moments.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

ENGLISH_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
RUSSIAN_MONTHS = (
    "январ", "феврал", "март", "апрел", "ма", "июн",
    "июл", "август", "сентябр", "октябр", "ноябр", "декабр",
)  # fmt: skip
"""Stems: "ноября", "ноябре", "ноябрь" all begin with "ноябр" ("мая", "мае", "май": "ма")."""

ENGLISH = "|".join(
    (
        r"jan(?:uary)?", r"feb(?:ruary)?", r"mar(?:ch)?", r"apr(?:il)?", "may", r"june?",
        r"july?", r"aug(?:ust)?", r"sep(?:t(?:ember)?)?", r"oct(?:ober)?", r"nov(?:ember)?",
        r"dec(?:ember)?",
    )
)  # fmt: skip
RUSSIAN = "|".join(
    (
        "январ[ьяе]", "феврал[ьяе]", "марта?", "марте", "апрел[ьяе]", "ма[йяе]", "июн[ьяе]",
        "июл[ьяе]", "августа?", "августе", "сентябр[ьяе]", "октябр[ьяе]", "ноябр[ьяе]",
        "декабр[ьяе]",
    )
)  # fmt: skip
_PARTS = {
    "EN": rf"(?P<month>{ENGLISH})\.?",
    "RU": rf"(?P<month>{RUSSIAN})",
    "DAY": r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?",
    "YEAR": r"(?P<year>(?:19|20)\d\d)",
}


def _form(template: str) -> re.Pattern[str]:
    """A date form: `template` with EN, RU, DAY and YEAR for their parts, spaces for
    runs of white space, standing as words of its own."""
    pattern = template.replace(" ", r"\s+")
    for name, part in _PARTS.items():
        pattern = pattern.replace(name, part)
    return re.compile(r"(?<![\w.-])" + pattern + r"(?![\w-])", re.IGNORECASE)


DAY_FORMS = (
    _form("DAY (?:of )?EN(?:,? YEAR)?"),  # 9 November 2022, 9th of November, 2022
    _form("DAY RU(?: YEAR)?"),  # 9 ноября 2022
    _form("EN DAY(?:,? YEAR)?"),  # November 9, 2022
)
MONTH_FORMS = (_form("EN,? YEAR"), _form("RU YEAR"))
ISO_DAY = re.compile(
    r"(?<![\w.-])(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?![\w-])"
)
DOTTED_DAY = re.compile(
    r"(?<![\w.-])(?P<day>[0-3]?\d)\.(?P<month>[01]?\d)\.(?P<year>(?:19|20)\d\d)(?![\w-])"
)


def month_number(name: str) -> int:
    """1-12 for an English or Russian month name as the forms above match it."""
    name = name.lower().rstrip(".")
    for number, english in enumerate(ENGLISH_MONTHS, start=1):
        if english.startswith(name[:3]):
            return number
    # Russian: the longest stem that begins the word ("март" before "ма").
    stems = sorted(enumerate(RUSSIAN_MONTHS, start=1), key=lambda pair: -len(pair[1]))
    return next(number for number, stem in stems if name.startswith(stem))


def _day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _latest(month: int, day: int, today: date) -> date | None:
    """The latest `month`/`day` not after `today` (29 February: within eight years)."""
    for year in range(today.year, today.year - 8, -1):
        found = _day(year, month, day)
        if found is not None and found <= today:
            return found
    return None


NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "один": 1, "одну": 1, "два": 2, "две": 2,
    "пару": 2, "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8,
    "девять": 9, "десять": 10,
}  # fmt: skip
WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6, "понедельник": 0, "вторник": 1, "сред": 2, "четверг": 3, "пятниц": 4,
    "суббот": 5, "воскресенье": 6,
}  # fmt: skip
"""English names and Russian stems ("в прошлую среду": "сред")."""
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(NUMBERS) + ")"


def _relative(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + pattern.replace(" ", r"\s+") + r"(?![\w-])", re.I)


DAYS_BACK = (
    (_relative("(?:the )?day before yesterday|позавчера"), 2),
    (_relative(r"yesterday|вчера|вчерашн\w*"), 1),
)
AGO = (
    _relative(_COUNT + r" (?P<unit>days?|weeks?|months?|years?) ago"),
    _relative("(?:" + _COUNT + r" )?(?P<unit>день|дн[яей]+|недел[июь]|месяц\w*|год[а]?|лет) назад"),
)
LAST = (
    # Not "the last week of the trip" (`\x20`: `_relative` spreads a plain space).
    _relative(r"(?<!the\x20)(?:last|previous) (?P<unit>week|month|year)"),
    _relative(r"прошл(?:ой|ую|ая) (?P<unit>недел)[еюя]"),
    _relative(r"прошл(?:ом|ый|ого) (?P<unit>месяц|год)(?:[еуа])?"),
)
LAST_WEEKDAY = (
    _relative(r"last (?P<weekday>" + "|".join(list(WEEKDAYS)[:7]) + ")"),
    _relative(r"прошл(?:ый|ую|ое|ой) (?P<weekday>" + "|".join(list(WEEKDAYS)[7:]) + r")\w*"),
)


def _unit(name: str) -> str:
    """day, week, month or year, for an English or Russian unit as the forms match it."""
    name = name.lower()
    for unit, starts in (
        ("day", ("day", "ден", "дн")),
        ("week", ("week", "недел")),
        ("month", ("month", "месяц")),
    ):
        if name.startswith(starts):
            return unit
    return "year"  # year, years, год, года, лет


def _month_start(day: date, months_back: int) -> date:
    """The first day of the month `months_back` months before `day`'s (negative: after)."""
    months = day.year * 12 + day.month - 1 - months_back
    return date(months // 12, months % 12 + 1, 1)


def _period_back(unit: str, count: int, today: date) -> tuple[date, date]:
    """The day, the week (from Monday), the month or the year `count` of them before
    `today`'s, as (first day, last day)."""
    if unit == "day":
        day = today - timedelta(days=count)
        return day, day
    if unit == "week":
        monday = today - timedelta(days=today.weekday() + 7 * count)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        return _month_start(today, count), _month_start(today, count - 1) - timedelta(days=1)
    return date(today.year - count, 1, 1), date(today.year - count, 12, 31)


def relative_periods(text: str, today: date) -> list[tuple[re.Match[str], date, date]]:
    """The past days, weeks, months and years `text` counts back from `today`, each with
    the words that name it."""
    found = []
    for pattern, back in DAYS_BACK:
        found += [(match, *_period_back("day", back, today)) for match in pattern.finditer(text)]
    for pattern in AGO:
        for match in pattern.finditer(text):
            count = match["count"]
            number = 1 if count is None else NUMBERS.get(count.lower()) or int(count)
            found.append((match, *_period_back(_unit(match["unit"]), number, today)))
    for pattern in LAST:
        for match in pattern.finditer(text):
            found.append((match, *_period_back(_unit(match["unit"]), 1, today)))
    for pattern in LAST_WEEKDAY:
        for match in pattern.finditer(text):
            name = match["weekday"].lower()
            weekday = next(number for stem, number in WEEKDAYS.items() if name.startswith(stem))
            day = today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)
            found.append((match, day, day))
    return found


def named_periods(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    """The days and months `text` names, in order of appearance and without repeats, as
    [start, end) moments in `now`'s time zone."""
    found: list[tuple[int, date, date]] = []
    taken: list[tuple[int, int]] = []

    def add(match: re.Match[str], first: date | None, last: date | None) -> None:
        if (
            first is None
            or last is None
            or any(match.start() < end and start < match.end() for start, end in taken)
        ):
            return
        taken.append(match.span())
        found.append((match.start(), first, last))

    today = now.date()
    for pattern in (ISO_DAY, DOTTED_DAY):
        for match in pattern.finditer(text):
            day = _day(int(match["year"]), int(match["month"]), int(match["day"]))
            add(match, day, day)
    for pattern in DAY_FORMS:
        for match in pattern.finditer(text):
            name, year = match["month"], match["year"]
            if not year and name.isascii() and not name[0].isupper():
                continue  # "I may 5 times": an English month is written capitalised
            month, day = month_number(name), int(match["day"])
            when = _day(int(year), month, day) if year else _latest(month, day, today)
            add(match, when, when)
    for pattern in MONTH_FORMS:
        for match in pattern.finditer(text):
            first = date(int(match["year"]), month_number(match["month"]), 1)
            add(match, first, _month_start(first, -1) - timedelta(days=1))
    for match, first, last in relative_periods(text, today):
        add(match, first, last)
    periods: dict[tuple[datetime, datetime], None] = {}
    for _, first, last in sorted(found, key=lambda item: item[0]):
        start = datetime(first.year, first.month, first.day, tzinfo=now.tzinfo)
        periods[(start, start + timedelta(days=(last - first).days + 1))] = None
    return list(periods)
