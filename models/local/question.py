"""A question read into what it asks, or the words it could not place: ``read_question``.

The offline model answers only a question it has read whole. The question is cut
into words, and every word must be placed: as part of *what* is asked (people in
view now, the most at once, crossings in or out, zone visits and dwell, the busiest
time, a report, a report's counts), *where* (a camera, a line or a zone, by the
names the device or its log has), *when* (now, the whole log, today, yesterday, this
morning, since 9, between 9 and 11, the last N minutes, hours or days, a weekday),
or as one of the small words that carry none of that ("how", "the", "were").
A word left over ("red", "dogs", "why", "weather", an unknown place) means the
question asks something else, and it is refused, naming the words, never answered
as the nearest question it resembles.

Written here, not with a grammar library or a date parser: the questions are short
and their parts come in any order, so what matters is the accounting of every word
against a closed vocabulary (which a grammar would need as well), and the times are
a closed set read into the log's own ranges. ``lark`` (39 ms to import) and
``dateparser`` (47 ms, plus 87 ms for its first parse and 1.1 s for a phrase it does
not know, trying every language) were measured on the ``ask`` path; neither would
say which words it did not use, and a date parser gives instants, not ranges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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


# Words that carry no part of what, where or when.
FUNCTION_WORDS = frozenset(
    """
    how many much what was were is are be been being did do does has have had the a an
    there it its in at on of to for by from with and or please tell me us show give i we
    you can could would will any number total people person persons folk they them this
    that these those so far all just into inside within near view get got go see seen
    say count counted counting let know there's it's what's were whole log video
    recording scene frame overall altogether entire during over up ever about here
    currently there were amount through across via customers customer shoppers guests
    clients individuals humans picture image
    """.split()  # noqa: SIM905 (a word list reads best as words)
)
PEOPLE_WORDS = frozenset(
    {"people", "persons", "person", "customers", "shoppers", "visitors", "guests", "those",
     "anyone", "anybody", "everyone", "ones"}
)  # fmt: skip
# Nouns that may stand beside a place's name ("the door line", "zone left").
PLACE_NOUNS = frozenset({"camera", "cameras", "line", "lines", "zone", "zones", "area", "areas"})
# Before a place's name: "at the door", "in left", "through post".
PLACE_BEFORE = frozenset(
    {"the", "at", "in", "on", "by", "through", "of", "for", "inside", "near", "into", "zone",
     "line", "camera", "across", "past", "to", "from"}
)  # fmt: skip

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

_TOKEN = re.compile(
    r"job-[0-9a-f]+|\d{1,2}:\d{2}|\d+(?:\.\d+)?(?:am|pm|h|m|min|mins)?|[a-z]+(?:[-_'][a-z]+)*",
    re.I,
)


def words_of(text: str) -> list[str]:
    """The question's words, lower case, punctuation dropped ("what's" stays one word)."""
    return [w.lower() for w in _TOKEN.findall(text.replace("\u2019", "'"))]


# --------------------------------------------------------------------------- cues


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


Match = Callable[[Reading, int], int]  # how many words from ``i`` it placed (0: none)

# Multi-word phrases first within each table: the longest is tried first.
CUE_PHRASES: dict[str, tuple[tuple[str, ...], ...]] = {
    "enter": (
        ("came", "in"), ("come", "in"), ("coming", "in"), ("walked", "in"), ("went", "in"),
        ("go", "in"), ("got", "in"), ("came", "inside"), ("walked", "inside"),
        ("went", "inside"), ("entered",), ("enter",), ("entering",), ("entries",),
        ("entry",), ("entrances",), ("arrived",), ("arrivals",), ("arrive",), ("visitors",),
        ("visitor",), ("footfall",),
    ),
    "exit": (
        ("came", "out"), ("come", "out"), ("went", "out"), ("walked", "out"), ("go", "out"),
        ("gone", "out"), ("exited",), ("exits",), ("exit",), ("exiting",), ("left",),
        ("leave",), ("leaving",), ("departed",), ("departures",),
    ),
    "cross": (
        ("crossings",), ("crossing",), ("crossed",), ("cross",), ("passed",), ("passes",),
        ("walked", "past"), ("went", "through"), ("walked", "through"), ("came", "through"),
        ("in", "and", "out"), ("ins", "and", "outs"),
    ),
    "stay": (
        ("how", "long"), ("dwell",), ("dwelled",), ("dwelt",), ("dwelling",), ("dwells",),
        ("stayed",), ("stay",), ("stays",), ("staying",), ("linger",), ("lingered",),
        ("lingering",), ("waited",), ("wait",), ("waiting",), ("loitered",), ("loitering",),
        ("spent",), ("longest",),
    ),
    "visit": (("visits",), ("visit",), ("visited",)),
    "most": (
        ("at", "most"), ("at", "the", "most"), ("at", "once"), ("at", "one", "time"),
        ("at", "the", "same", "time"), ("most",), ("maximum",), ("max",), ("peak",),
        ("highest",), ("largest",), ("biggest",),
    ),
    "busy": (("busiest",), ("busy",), ("crowded",), ("crowd",), ("full",), ("fullest",)),
    "when": (("what", "time"), ("which", "time"), ("which", "minute"), ("when",)),
    "count": (
        ("how", "many"), ("number", "of"), ("anyone",), ("anybody",), ("someone",),
        ("somebody",), ("occupancy",), ("occupied",), ("people",), ("persons",), ("person",),
        ("count",), ("empty",), ("nobody",), ("standing",), ("sitting",), ("present",),
    ),
    "report": (
        ("report",), ("watch",), ("monitor",), ("survey",), ("summarise",), ("summarize",),
        ("summary",), ("observe",),
    ),
    "job": (("counts",), ("results",), ("result",), ("pages",), ("page",), ("minutes",)),
}  # fmt: skip


def _phrase_at(reading: Reading, i: int, phrase: Sequence[str]) -> bool:
    return all(reading.word(i + k) == w and not reading.used[i + k] for k, w in enumerate(phrase))


# --------------------------------------------------------------------------- times


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


def _read_time(reading: Reading, i: int) -> int:
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


# --------------------------------------------------------------------------- places


def _read_place(reading: Reading, i: int) -> int:
    """A camera's, line's or zone's name at ``i`` (with its noun): words taken."""
    before = reading.word(i - 1)
    for kind, names in (("zone", reading.names.zones), ("line", reading.names.lines),
                        ("camera", reading.names.cameras)):  # fmt: skip
        for name in sorted(names, key=len, reverse=True):
            parts = tuple(words_of(name.replace("_", " ").replace("-", " ")))
            if not parts or not _phrase_at(reading, i, parts):
                # A name written as it is ("back-door") is one word.
                if reading.word(i) != name.lower():
                    continue
                parts = (name.lower(),)
            after = reading.word(i + len(parts))
            if before not in PLACE_BEFORE and after not in PLACE_NOUNS and i != 0:
                continue  # "how many left": the word, not the zone named "left"
            taken = len(parts)
            if after in PLACE_NOUNS:
                noun = after.rstrip("s")
                if noun in ("camera", "line", "zone") and noun != kind:
                    continue  # "the door camera" names a camera, not the line "door"
                taken += 1
            setattr(reading, kind, _one(reading, kind, getattr(reading, kind), name))
            reading.take(i, taken)
            return taken
    return 0


def _one(reading: Reading, kind: str, was: str, name: str) -> str:
    if was and was != name:
        reading.problems.append(f"it names two {kind}s ({was}, {name})")
    return name


# --------------------------------------------------------------------------- reading


def read_question(text: str, names: Names = Names()) -> Query | Unread:
    """What ``text`` asks, every word of it placed; or why not (``Unread``)."""
    reading = Reading(words_of(text), names, [])
    reading.used = [False] * len(reading.words)
    if not reading.words:
        return Unread("the question is empty")
    for i, word in enumerate(reading.words):
        if word.startswith("job-"):
            reading.job = word
            reading.used[i] = True
    i = 0
    while i < len(reading.words):
        taken = _read_place(reading, i) or _read_time(reading, i) or _read_cue(reading, i)
        i += max(taken, 1)
    for i, word in enumerate(reading.words):
        if word in ("who", "that") and reading.word(i - 1) in PEOPLE_WORDS:
            reading.used[i] = True  # "people who came in": which people, not who they are
    for i, word in enumerate(reading.words):
        if not reading.used[i] and word in PLACE_NOUNS:
            reading.used[i] = True
            reading.cues.add("place:" + word.rstrip("s"))
        elif not reading.used[i] and word in FUNCTION_WORDS:
            reading.used[i] = True
    left = tuple(w for w, used in zip(reading.words, reading.used, strict=True) if not used)
    if left:
        return Unread(_why_left(reading, left), left)
    if reading.problems:
        return Unread(f"I cannot read it: {reading.problems[0]}")
    return _query(reading)


def _read_cue(reading: Reading, i: int) -> int:
    for cue, phrases in CUE_PHRASES.items():
        for phrase in sorted(phrases, key=len, reverse=True):
            if _phrase_at(reading, i, phrase):
                if cue == "job" and not reading.job:
                    continue  # "counts" and "minutes" are a report's only beside its id
                reading.cues.add(cue)
                reading.take(i, len(phrase))
                return len(phrase)
    return 0


def _why_left(reading: Reading, left: tuple[str, ...]) -> str:
    said = ", ".join(f"'{w}'" for w in left)
    asked = sorted({w for w in left if w in ("why", "who", "whose")})
    if asked:
        return (
            f"I cannot say {' or '.join(asked)}: I count people, I do not know who they are "
            "or why they came"
        )
    at = ("at", "in", "through", "by", "near", "inside", "from")
    placed = [
        word
        for i, word in enumerate(reading.words)
        if word in left
        and (
            reading.word(i - 1) in at
            or (reading.word(i - 1) == "the" and reading.word(i - 2) in at)
        )
    ]
    if placed:
        return (
            f"I know no camera, line or zone called '{placed[0]}' ({reading.names.said()}), "
            f"and I cannot place {said} in the question"
        )
    return (
        f"I cannot answer questions about {said}: I count people in view, crossings and zone visits"
    )


def _query(reading: Reading) -> Query | Unread:
    cues = reading.cues
    place = {"camera": reading.camera, "line": reading.line, "zone": reading.zone}
    when = reading.when
    if reading.job:
        if cues - {"job", "report", "count"}:
            return Unread("a report's counts are read by its job id alone")
        return Query(What.JOB, job=reading.job)
    # "the zone", "the line", "the camera": the only one there is.
    for kind, names in (("zone", reading.names.zones), ("line", reading.names.lines),
                        ("camera", reading.names.cameras)):  # fmt: skip
        if f"place:{kind}" in cues and not place[kind] and len(names) == 1:
            place[kind] = names[0]
    if "report" in cues:
        minutes = reading.minutes or (when.minutes if when is not None else None)
        if cues - {"report", "count", "job"} or reading.line or reading.zone:
            return Unread("a report watches the whole view for a span: ask 'report for N minutes'")
        return Query(What.REPORT, When(minutes=minutes, said=minutes is not None), **_cam(place))
    if reading.minutes is not None:
        return Unread(
            "a span from now on is for a report ('report for 5 minutes'); for the past, "
            "say 'the last N minutes'"
        )
    moving = cues & {"enter", "exit", "cross"}
    if moving:
        if cues & {"most", "busy", "when", "stay"}:
            return Unread("I count crossings over a period, not when or where most of them were")
        if place["zone"]:
            return Unread(
                "crossings are counted at lines; a zone counts visits ('how many visited "
                "the zone?')"
            )
        if when is not None and when.now:
            return Unread(
                "crossings are counted over a period ('today', 'the last 10 minutes'), not now"
            )
        direction = ""
        if "enter" in cues and "exit" not in cues:
            direction = "in"
        elif "exit" in cues and "enter" not in cues:
            direction = "out"
        return Query(What.CROSSINGS, when or When(), direction=direction, **_where(place))
    if "visit" in cues:
        if not place["zone"] and not reading.names.zones:
            return Query(What.CROSSINGS, when or When(), direction="in", **_where(place))
        if when is not None and when.now:
            return Unread("visits are counted over a period, not now")
        return Query(What.ZONE_VISITS, when or When(), **_where(place))
    if "stay" in cues:
        if when is not None and when.now:
            return Unread("how long people stayed is read over a period, not now")
        if cues & {"busy", "when"}:
            return Unread("I say how long people stayed per zone, not when")
        return Query(What.ZONE_VISITS, when or When(), **_where(place))
    if cues & {"busy", "most", "when"}:
        if when is not None and when.now:
            return Unread(
                "the most people at once is read over a period; 'now' asks how many are in view"
            )
        if place["line"]:
            return Unread("a line counts crossings, not people at once")
        if place["zone"]:
            return Query(What.ZONE_VISITS, when or When(), **_where(place))
        if "when" in cues or ("busy" in cues and "most" not in cues and "count" not in cues):
            return Query(What.BUSIEST, when or When(), **_where(place))
        return Query(What.MOST, when or When(), **_where(place))
    if "count" in cues or "place:zone" in cues:
        if place["line"]:
            return Unread("a line counts people crossing it: ask how many came in or went out")
        if when is not None and not when.now:
            return Unread(
                "over a period I count crossings, visits and the most at once, not people "
                "one by one: ask how many came in, or the most at once"
            )
        return Query(What.PEOPLE_NOW, NOW, camera=place["camera"], zone=place["zone"])
    return Unread("I could not tell what it asks")


def _cam(place: dict[str, str]) -> dict[str, str]:
    return {"camera": place["camera"]}


def _where(place: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in place.items() if v}


def with_default_when(query: Query, when: When) -> Query:
    return query if query.when.said else replace(query, when=when)


__all__ = [
    "NOW",
    "Names",
    "Query",
    "Unread",
    "What",
    "When",
    "read_question",
    "words_of",
]
