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

from models.local.reading import (
    NOW,
    Names,
    Query,
    Reading,
    Unread,
    What,
    When,
    words_of,
)
from models.local.reading import phrase_at as _phrase_at
from models.local.times import read_time as _read_time

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


def read_question(text: str, names: Names | None = None) -> Query | Unread:
    """What ``text`` asks, every word of it placed against ``names`` (the cameras, lines
    and zones there are); or why not (``Unread``)."""
    reading = Reading(words_of(text), names or Names(), [])
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
