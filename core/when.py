"""When a task runs: "when" expressions in Russian and English, read into a first run and,
for a recurring task, an RFC 5545 recurrence rule.

Dates and times are read by dateparser (relative: "через 10 секунд", "in 10 minutes";
absolute: "завтра в 9:00", "on Friday at 18:30", "25 декабря"); recurrence by a small
vocabulary of its markers ("каждый день", "every Monday", "по будням") whose remaining
time and weekday dateparser reads, the rule itself being dateutil's `rrule`. Times are
read in the user's time zone and returned aware. A date without a time of day means
`DEFAULT_HOUR`:00. What cannot be read raises `WhenError`, whose message gives two
examples that can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LANGUAGES = ["ru", "en"]
DEFAULT_HOUR = 9
EXAMPLES = ("через 10 минут", "every Monday at 10")

DAILY = ("каждый день", "каждое утро", "ежедневно", "every day", "each day", "daily")
WEEKDAYS = ("по будням", "в будни", "каждый будний день", "every weekday", "on weekdays")
EACH = ("каждый", "каждую", "каждое", "every", "each")

_BARE_HOUR = re.compile(r"\b(at|в)\s+(\d{1,2})(?![\d:.])")
"""A bare hour after "at"/"в" ("at 10", "в 8"), which dateparser takes for a day or month:
written as a time ("at 10:00") before it reads it."""


class WhenError(ValueError):
    """A "when" that cannot be read, or one already past; nothing is scheduled."""


@dataclass(frozen=True)
class When:
    first_run: datetime
    """Aware, in the user's time zone."""
    rule: str | None
    """RFC 5545 RRULE (without DTSTART) of a recurring task; None for one run."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise WhenError(f"unknown time zone {name!r} (e.g. Europe/Moscow, UTC)") from error


def unreadable(text: str) -> WhenError:
    first, second = EXAMPLES
    return WhenError(f"cannot read the time {text.strip()!r}; try {first!r} or {second!r}")


def next_run(rule: str, timezone: str, after: datetime) -> datetime:
    """The rule's first time strictly after `after`, in `timezone` (missed times between
    are skipped, never caught up one by one)."""
    from dateutil.rrule import rrulestr

    local = after.astimezone(zone(timezone)).replace(microsecond=0)
    found = rrulestr(rule, dtstart=local).after(local)
    if found is None:
        raise WhenError(f"the rule {rule!r} has no later time")
    return found


def parse_when(text: str, now: datetime, timezone: str) -> When:
    """Read a whole "when" expression at `now` in the user's `timezone`."""
    found, _ = _read(text, now, timezone, search=False)
    return found


def split_request(text: str, now: datetime, timezone: str) -> tuple[When, str]:
    """Read `<when> <what>` ("через 5 секунд выпить воды"): the time and the request."""
    found, rest = _read(text, now, timezone, search=True)
    if not rest:
        raise WhenError("say what to remind of after the time, e.g. 'через 10 минут позвонить'")
    return found, rest


def _read(text: str, now: datetime, timezone: str, search: bool) -> tuple[When, str]:
    local_now = now.astimezone(zone(timezone))
    plain = _BARE_HOUR.sub(r"\1 \2:00", " ".join(text.lower().split()))
    original = " ".join(text.split())
    marker = _marker(plain)
    if marker is None:
        moment, rest = _moment(plain, original, local_now, search)
        if moment <= local_now:
            raise WhenError(f"{text.strip()!r} is already past")
        return When(first_run=moment, rule=None), rest
    kind, length = marker
    remainder, original_rest = plain[length:].strip(), original[length:].strip()
    if kind == "each":
        moment, rest = _moment(remainder, original_rest, local_now, search)
        days = f";BYDAY={_DAY_CODES[moment.weekday()]}"
        frequency = "WEEKLY"
    else:
        moment, rest = _time_of_day(remainder, original_rest, local_now, search)
        days = ";BYDAY=MO,TU,WE,TH,FR" if kind == "weekdays" else ""
        frequency = "WEEKLY" if kind == "weekdays" else "DAILY"
    rule = f"FREQ={frequency}{days};BYHOUR={moment.hour};BYMINUTE={moment.minute};BYSECOND=0"
    return When(first_run=next_run(rule, timezone, now), rule=rule), rest


_DAY_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


def _marker(plain: str) -> tuple[str, int] | None:
    """Which recurrence marker `plain` starts with ("daily", "weekdays" or "each") and
    its length; None for a single run."""
    for kind, words in (("weekdays", WEEKDAYS), ("daily", DAILY), ("each", EACH)):
        for word in sorted(words, key=len, reverse=True):
            if plain == word or plain.startswith(word + " "):
                return kind, len(word)
    return None


def _settings(local_now: datetime) -> dict[str, Any]:
    return {
        "RELATIVE_BASE": local_now.replace(tzinfo=None),
        "PREFER_DATES_FROM": "future",
        "TIMEZONE": str(local_now.tzinfo),
        "RETURN_AS_TIMEZONE_AWARE": True,
    }


def _moment(plain: str, original: str, local_now: datetime, search: bool) -> tuple[datetime, str]:
    """The time `plain` names (at its start, when `search`: then also the words of
    `original` after it; `plain` is `original` lower-cased, word for word)."""
    import dateparser
    from dateparser.search import search_dates

    if not plain:
        raise unreadable(original)
    rest = ""
    if search:
        hits = search_dates(plain, languages=LANGUAGES, settings=_settings(local_now)) or []
        if not hits or not plain.startswith(hits[0][0]):
            raise unreadable(original)
        phrase, moment = hits[0]
        rest = " ".join(original.split()[len(phrase.split()) :])
    else:
        phrase = plain
        moment = dateparser.parse(plain, languages=LANGUAGES, settings=_settings(local_now))
        if moment is None:
            raise unreadable(original)
    moment = moment.astimezone(local_now.tzinfo)
    if _names_no_time(phrase, moment, local_now):
        moment = moment.replace(hour=DEFAULT_HOUR, minute=0, second=0)
    return moment.replace(microsecond=0), rest


def _names_no_time(phrase: str, moment: datetime, local_now: datetime) -> bool:
    """A day named without a time of day ("25 декабря", "friday"): dateparser gives it
    midnight, or the current time of day ("завтра"); relative offsets keep theirs."""
    if any(char.isdigit() for char in phrase.replace(str(moment.day), "", 1)):
        return False
    same_clock = (moment.hour, moment.minute) == (local_now.hour, local_now.minute)
    return (moment.hour, moment.minute) == (0, 0) or (same_clock and moment > local_now)


def _time_of_day(
    plain: str, original: str, local_now: datetime, search: bool
) -> tuple[datetime, str]:
    """The time of day of a recurring task ("в 9:00"); `DEFAULT_HOUR` when none is said."""
    if not plain:
        return local_now.replace(hour=DEFAULT_HOUR, minute=0), ""
    try:
        return _moment(plain, original, local_now, search)
    except WhenError:
        if not search:
            raise
        return local_now.replace(hour=DEFAULT_HOUR, minute=0), original
