"""A question as the offline model reads it: its words, what has been placed so far, and
what it was read into (``Query``) or why not (``Unread``). ``models/local/question.py``
places the words; ``models/local/times.py`` reads the times among them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class What(StrEnum):
    PEOPLE_NOW = "people now"  # how many people are in view (a camera, or a zone of it)
    MOST = "most at once"  # the most people in view at once over a period
    CROSSINGS = "crossings"  # entries and exits per line over a period
    ZONE_VISITS = "zone visits"  # visits, dwell and the most at once per zone
    BUSIEST = "busiest time"  # when it was busiest over a period
    REPORT = "report"  # watch for a span, then min/max/mean
    JOB = "job counts"  # a report's per-minute counts


@dataclass(frozen=True)
class Names:
    """The places a question may name: the cameras, lines and zones that exist."""

    cameras: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()

    def said(self) -> str:
        parts = [
            f"{kind}: {', '.join(names)}"
            for kind, names in (
                ("cameras", self.cameras),
                ("lines", self.lines),
                ("zones", self.zones),
            )
            if names
        ]
        return "; ".join(parts) or "none"


@dataclass(frozen=True)
class When:
    """When a question asks about: ``now``; a period of the log (``period``: as the log
    tools read it, ``all`` for the whole log); or a span from now on (``minutes``)."""

    now: bool = False
    period: str = "all"
    minutes: float | None = None
    said: bool = False  # the question named it (else the default for its kind)


NOW = When(now=True, said=True)


@dataclass(frozen=True)
class Query:
    what: What
    when: When = field(default_factory=When)
    camera: str = ""
    line: str = ""
    zone: str = ""
    direction: str = ""  # "in", "out", or "" for both
    job: str = ""


@dataclass(frozen=True)
class Unread:
    """A question not read whole: why, in a sentence, and the words left over."""

    why: str
    words: tuple[str, ...] = ()


_TOKEN = re.compile(
    r"job-[0-9a-f]+|\d{1,2}:\d{2}|\d+(?:\.\d+)?(?:am|pm|h|m|min|mins)?|[a-z]+(?:[-_'][a-z]+)*",
    re.I,
)


def words_of(text: str) -> list[str]:
    """The question's words, lower case, punctuation dropped ("what's" stays one word)."""
    return [w.lower() for w in _TOKEN.findall(text.replace("\u2019", "'"))]


@dataclass
class Reading:
    """What has been placed so far, word by word."""

    words: list[str]
    names: Names
    used: list[bool]
    cues: set[str] = field(default_factory=set)
    camera: str = ""
    line: str = ""
    zone: str = ""
    job: str = ""
    when: When | None = None
    minutes: float | None = None  # a span said as "for N minutes" / "N minutes" (reports)
    problems: list[str] = field(default_factory=list)

    def take(self, start: int, length: int) -> None:
        for i in range(start, start + length):
            self.used[i] = True

    def word(self, i: int) -> str:
        return self.words[i] if 0 <= i < len(self.words) else ""


def phrase_at(reading: Reading, i: int, phrase: Sequence[str]) -> bool:
    return all(reading.word(i + k) == w and not reading.used[i + k] for k, w in enumerate(phrase))


__all__ = ["NOW", "Names", "Query", "Reading", "Unread", "What", "When", "phrase_at", "words_of"]
