"""The times of a question (``models/local/question.py``), read into the log's periods: now;
today, yesterday and their parts; since a time or a weekday; between two times; before or
after one; the last N minutes, hours or days; a span from now on ("for 5 minutes").
"""

from __future__ import annotations

import re

from models.local.reading import NOW, Reading, When
from models.local.reading import phrase_at as _phrase_at

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
    "a": 1, "an": 1,
}  # fmt: skip
UNIT_MINUTES = {
    "second": 1 / 60, "sec": 1 / 60, "minute": 1.0, "min": 1.0, "hour": 60.0, "hr": 60.0,
    "h": 60.0, "day": 1440.0, "week": 10080.0,
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PARTS_OF_DAY = {"morning": (5, 12), "afternoon": (12, 17), "evening": (17, 22)}


def _number(word: str) -> float | None:
    if re.fullmatch(r"\d+(?:\.\d+)?", word):
        return float(word)
    return float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else None


def _unit(word: str) -> float | None:
    stem = word[:-1] if word.endswith("s") and word not in ("s",) else word
    return UNIT_MINUTES.get(stem)


def _clock(word: str, after: str) -> tuple[int, int, int] | None:
    """A clock time ("9", "9:30", "9am", "9 pm") and how many words it took; None if not."""
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(am|pm)?", word)
    if word in ("noon", "midday"):
        return 12, 0, 1
    if word == "midnight":
        return 0, 0, 1
    if match is None:
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    half = match.group(3) or (after if after in ("am", "pm") else "")
    taken = 2 if not match.group(3) and after in ("am", "pm", "o'clock") else 1
    if half:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    return hour, minute, taken


def _hhmm(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


def read_time(reading: Reading, i: int) -> int:
    """A time expression at ``i``: sets ``reading.when`` (or ``minutes``); words taken."""
    taken = _time_at(reading, i)
    if taken:
        reading.take(i, taken)
    return taken


def _time_at(reading: Reading, i: int) -> int:
    w = reading.word
    if reading.used[i]:
        return 0
    # now
    for phrase in (("right", "now"), ("at", "the", "moment"), ("at", "present"), ("now",),
                   ("currently",), ("still",)):  # fmt: skip
        if _phrase_at(reading, i, phrase):
            return _set_when(reading, NOW, len(phrase))
    # the whole log
    for phrase in (("so", "far"), ("in", "total"), ("all", "day"), ("all", "time"),
                   ("ever",), ("overall",), ("altogether",)):  # fmt: skip
        if _phrase_at(reading, i, phrase):
            period = "today" if phrase == ("all", "day") else "all"
            return _set_when(reading, When(period=period, said=True), len(phrase))
    # days and parts of days
    day = ""
    k = i
    if w(k) == "this" and w(k + 1) in PARTS_OF_DAY:
        day, k = "today", k + 1
    elif w(k) in ("today", "yesterday"):
        day, k = w(k), k + 1
        if w(k) in PARTS_OF_DAY:
            part = w(k)
            start, end = PARTS_OF_DAY[part]
            period = f"{day} {_hhmm(start, 0)}-{_hhmm(end, 0)}"
            return _set_when(reading, When(period=period, said=True), k + 1 - i)
        if w(k) == "in" and w(k + 1) == "the" and w(k + 2) in PARTS_OF_DAY:
            start, end = PARTS_OF_DAY[w(k + 2)]
            period = f"{day} {_hhmm(start, 0)}-{_hhmm(end, 0)}"
            return _set_when(reading, When(period=period, said=True), k + 3 - i)
        return _set_when(reading, When(period=day, said=True), k - i)
    if day == "today" and w(k) in PARTS_OF_DAY:
        start, end = PARTS_OF_DAY[w(k)]
        period = f"today {_hhmm(start, 0)}-{_hhmm(end, 0)}"
        return _set_when(reading, When(period=period, said=True), k + 1 - i)
    if w(i) == "tonight":
        return _set_when(reading, When(period="today 17:00-24:00", said=True), 1)
    if w(i) in ("last", "on", "this") and w(i + 1) in WEEKDAYS:
        return _set_when(reading, When(period=w(i + 1), said=True), 2)
    if w(i) in WEEKDAYS:
        return _set_when(reading, When(period=w(i), said=True), 1)
    # since this morning: from the start of that part of today
    if w(i) == "since" and w(i + 1) == "this" and w(i + 2) in PARTS_OF_DAY:
        start = PARTS_OF_DAY[w(i + 2)][0]
        return _set_when(reading, When(period=f"since {_hhmm(start, 0)}", said=True), 3)
    # before noon, after 3pm (today)
    if w(i) in ("before", "after"):
        clock = _clock(w(i + 1), w(i + 2))
        if clock is not None:
            at = _hhmm(clock[0], clock[1])
            span = f"00:00-{at}" if w(i) == "before" else f"{at}-24:00"
            return _set_when(reading, When(period=f"today {span}", said=True), 1 + clock[2])
    # since 9, since 9:30am, since noon, since monday
    if w(i) == "since" and w(i + 1) in WEEKDAYS:
        return _set_when(reading, When(period=f"since {w(i + 1)}", said=True), 2)
    if w(i) == "since":
        clock = _clock(w(i + 1), w(i + 2))
        if clock is not None:
            hour, minute, taken = clock
            return _set_when(
                reading, When(period=f"since {_hhmm(hour, minute)}", said=True), 1 + taken
            )
    # between 9 and 11, from 9 to 11
    if w(i) in ("between", "from"):
        first = _clock(w(i + 1), w(i + 2))
        if first is not None:
            j = i + 1 + first[2]
            if w(j) in ("and", "to", "till", "until"):
                second = _clock(w(j + 1), w(j + 2))
                if second is not None:
                    span = f"{_hhmm(first[0], first[1])}-{_hhmm(second[0], second[1])}"
                    taken = j + 1 + second[2] - i
                    return _set_when(reading, When(period=f"today {span}", said=True), taken)
    # (in) the last/past N units, the last hour, the past day, N minutes
    k = i
    lead = w(k) in ("in", "over", "during", "for", "within")
    if lead:
        k += 1
    if w(k) == "the":
        k += 1
    last = w(k) in ("last", "past", "previous")
    if last:
        k += 1
    value = _number(w(k))
    unit = _unit(w(k + 1)) if value is not None else None
    # "a minute" is a span only where one is said: "for a minute", "the last an hour" not.
    spoken = w(k) not in ("a", "an") or lead or last
    if value is not None and unit is not None and spoken:
        taken = k + 2 - i
        minutes = value * unit
        # "2 days and 3 hours": one span, each part added.
        while w(i + taken) == "and" and _number(w(i + taken + 1)) is not None:
            more = _unit(w(i + taken + 2))
            if more is None:
                break
            minutes += (_number(w(i + taken + 1)) or 0.0) * more
            taken += 3
        if last:
            return _set_when(reading, _last(minutes), taken)
        reading.minutes = minutes  # "for 5 minutes": a span from now (a report)
        reading.take(i, taken)
        return taken
    if last and w(k) == "half" and (w(k + 1) == "hour" or w(k + 2) == "hour"):
        taken = k + (2 if w(k + 1) == "hour" else 3) - i  # "the last half (an) hour"
        return _set_when(reading, _last(30.0), taken)
    if last and _unit(w(k)) is not None:  # "the last hour"
        return _set_when(reading, _last(_unit(w(k)) or 0.0), k + 1 - i)
    if w(i) == "half" and w(i + 1) in ("an", "a") and w(i + 2) == "hour":
        reading.minutes = 30.0
        reading.take(i, 3)
        return 3
    # "9 minutes" with the number glued to its unit ("10m", "2h")
    glued = re.fullmatch(r"(\d+(?:\.\d+)?)(h|m|min|mins)", w(i))
    if glued:
        minutes = float(glued.group(1)) * (60.0 if glued.group(2) == "h" else 1.0)
        if w(i - 1) in ("last", "past"):
            return _set_when(reading, _last(minutes), 1)
        reading.minutes = minutes
        reading.take(i, 1)
        return 1
    return 0


def _last(minutes: float) -> When:
    if minutes >= 60 and (minutes / 60).is_integer():
        return When(period=f"last {minutes / 60:g} hours", minutes=minutes, said=True)
    return When(period=f"last {minutes:g} minutes", minutes=minutes, said=True)


def _set_when(reading: Reading, when: When, taken: int) -> int:
    if reading.when is not None and reading.when != when:
        reading.problems.append("it names two different times")
    reading.when = when
    return taken


__all__ = ["WEEKDAYS", "read_time"]
