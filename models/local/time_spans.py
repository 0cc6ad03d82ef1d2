"""How long a question asks about, as the offline model reads it.

"the last 90 minutes", "2 days and 3 hours", "the past week": a span in minutes. A question
that names a time this cannot read ("this month", "since Monday", "2 fortnights") must not
be answered for a default window instead: ``names_a_time`` says it named one, and the model
then says it cannot read the range rather than answer a different question.
"""

from __future__ import annotations

import re

_UNIT_MINUTES = {"w": 7 * 24 * 60.0, "d": 24 * 60.0, "h": 60.0, "m": 1.0, "s": 1 / 60}
_TERM = re.compile(
    r"(\d+(?:\.\d+)?)\s*(w|wks?|weeks?|d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)\b",
    re.I,
)
_LAST_UNIT = re.compile(r"\b(?:last|past|previous)\s+(week|day|hour|minute)\b", re.I)
_SINGLE = re.compile(r"\b(?:an?|one)\s+(week|day|hour|minute)\b", re.I)
_TIME_WORDS = re.compile(
    r"\b(weeks?|fortnights?|months?|years?|days?|weekends?|hours?|minutes?|ago|tonight"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|morning|afternoon|evening|night)\b",
    re.I,
)


def span_minutes(text: str) -> float | None:
    """The span ``text`` names, in minutes (each "N unit" added up), or None if it names
    none this can read."""
    terms = _TERM.findall(text)
    if terms:
        return sum(float(value) * _UNIT_MINUTES[unit[0].lower()] for value, unit in terms)
    for pattern in (_LAST_UNIT, _SINGLE):
        match = pattern.search(text)
        if match is not None:
            return _UNIT_MINUTES[match.group(1)[0].lower()]
    return None


def names_a_time(text: str) -> bool:
    """``text`` speaks of a time or a span (whether or not ``span_minutes`` reads it)."""
    return bool(_TIME_WORDS.search(text) or _TERM.search(text))


def said_span(minutes: float) -> str:
    """``90 minutes``, ``2 days``, ``2 weeks``: how a span is said back."""
    for unit, size in (("week", 10080.0), ("day", 1440.0), ("hour", 60.0)):
        if minutes >= size and (minutes / size).is_integer():
            count = int(minutes / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{minutes:g} minutes"


__all__ = ["names_a_time", "said_span", "span_minutes"]
