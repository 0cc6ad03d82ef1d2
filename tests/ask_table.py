"""The question table of ``lookout ask``: questions a shop operator asks of a recorded log,
each answerable one with its true answer read from the log itself, and questions that must
be refused (what ask cannot see, names the log does not have, times it does not hold).

The log is ``lookout run`` of the sample video with a line across the walkway (``post``), a
zone on the left (``left``) and a 10 s dwell time (``RUN_FLAGS``). The true answers are
computed here from the log's own events by the plainest reading (crossing events counted
by direction, the zone's events, the largest count), independent of the tools that answer.
Questions about now are asked with the sample video as the source, replayed fast (its
first frame is "now"), and the same zone: their truth is the log's first count.

Each row is judged one of three ways (``judge``): *right* (an answerable question answered
with its true figures, or an unanswerable one refused: exit 4), *refused* (an answerable
question refused), *wrong* (an answer with other figures, an unanswerable question
answered, or an error). ``scripts/bench/ask_table.py`` runs the table against a checkout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

LINE = "post=0.5599,0.7292,0.5599,0.2083"
ZONE = "left=0.05,0.2,0.45,0.2,0.45,0.95,0.05,0.95"
RUN_FLAGS = ("--line", LINE, "--zone", ZONE, "--dwell", "10")

LOG, NOW = "log", "now"  # asked of the log (--db), or of the sample video now (--source)


@dataclass(frozen=True)
class Truth:
    """What the log says, read plainly."""

    ins: int
    outs: int
    visits: int  # people who came into the zone (each rise of its count)
    dwells: int  # dwell events of the zone
    zone_most: int  # the most people in the zone at once
    most: int  # the most people in view at once
    first_count: int  # the count at the first frame
    first_zone: int  # people in the zone at the first frame


def truth_of(events: Iterable[dict[str, Any]]) -> Truth:
    events = list(events)
    crossings = [e for e in events if e["type"] == "crossing" and e.get("line") == "post"]
    zone = [e for e in events if e["type"] == "zone" and e.get("zone") == "left"]
    counts = [e for e in events if e["type"] == "count" and isinstance(e.get("count"), int)]
    visits = 0
    for e in zone:
        people, previous = e.get("people"), e.get("previous")
        if isinstance(people, int):
            visits += max(0, people - (previous if isinstance(previous, int) else 0))
    first = counts[0]
    first_zone = next(
        (
            int(e["people"])
            for e in zone
            if isinstance(e.get("people"), int) and e.get("t_media") == first.get("t_media")
        ),
        0,
    )
    return Truth(
        ins=sum(e["direction"] == "in" for e in crossings),
        outs=sum(e["direction"] == "out" for e in crossings),
        visits=visits,
        dwells=sum(1 for e in events if e["type"] == "dwell" and e.get("zone") == "left"),
        zone_most=max(
            (int(e["people"]) for e in zone if isinstance(e.get("people"), int)), default=0
        ),
        most=max(int(e["count"]) for e in counts),
        first_count=int(first["count"]),
        first_zone=first_zone,
    )


# What an answer must hold: (key path in the tool's answer, the true value).
Probe = Callable[[Truth], list[tuple[str, int]]]


@dataclass(frozen=True)
class Row:
    question: str
    asked: str  # LOG or NOW
    probe: Probe | None  # None: the question must be refused
    what: str  # the class of question, for the note's table
    # Its truth depends on the hour the log was made ("before noon"): the script asks it,
    # the test (whose log is made at whatever hour CI runs) leaves it out.
    hourly: bool = False


def _in(t: Truth) -> list[tuple[str, int]]:
    return [("lines.post.in", t.ins)]


def _out(t: Truth) -> list[tuple[str, int]]:
    return [("lines.post.out", t.outs)]


def _both(t: Truth) -> list[tuple[str, int]]:
    return [("lines.post.in", t.ins), ("lines.post.out", t.outs)]


def _visits(t: Truth) -> list[tuple[str, int]]:
    return [("zones.left.visits", t.visits)]


def _dwells(t: Truth) -> list[tuple[str, int]]:
    return [("zones.left.dwell_events", t.dwells)]


def _zone_most(t: Truth) -> list[tuple[str, int]]:
    return [("zones.left.max_people", t.zone_most)]


def _most(t: Truth) -> list[tuple[str, int]]:
    return [("people", t.most)]


def _now(t: Truth) -> list[tuple[str, int]]:
    return [("people", t.first_count)]


def _zone_now(t: Truth) -> list[tuple[str, int]]:
    return [("people", t.first_zone)]


ROWS: tuple[Row, ...] = (
    # entries
    Row("how many people came in?", LOG, _in, "entries"),
    Row("how many came in today?", LOG, _in, "entries"),
    Row("how many visitors?", LOG, _in, "entries"),
    Row("How many people entered?", LOG, _in, "entries"),
    Row("how many came in at post?", LOG, _in, "entries"),
    Row("how many people walked in so far?", LOG, _in, "entries"),
    Row("how many arrived in the last hour?", LOG, _in, "entries"),
    Row("how many came in during the last 10 minutes?", LOG, _in, "entries"),
    Row("how many came in since midnight?", LOG, _in, "entries"),
    Row("tell me how many people came in through the post line", LOG, _in, "entries"),
    # exits
    Row("how many people went out?", LOG, _out, "exits"),
    Row("how many left?", LOG, _out, "exits"),
    Row("how many exits were there today?", LOG, _out, "exits"),
    Row("how many went out at post today?", LOG, _out, "exits"),
    Row("how many people left in the past 2 hours?", LOG, _out, "exits"),
    # both ways
    Row("how many crossings?", LOG, _both, "crossings"),
    Row("how many people crossed the post line?", LOG, _both, "crossings"),
    Row("entries and exits today", LOG, _both, "crossings"),
    Row("how many came in and went out?", LOG, _both, "crossings"),
    # the zone
    Row("how busy was the left zone?", LOG, _zone_most, "zone"),
    Row("how many people visited the left zone?", LOG, _visits, "zone"),
    Row("how many visits did the left zone get today?", LOG, _visits, "zone"),
    Row("how many people lingered in the left zone?", LOG, _dwells, "dwell"),
    Row("did anyone dwell in the zone?", LOG, _dwells, "dwell"),
    Row("how many waited in the left zone?", LOG, _dwells, "dwell"),
    Row("how long did people stay in the left zone?", LOG, _dwells, "dwell"),
    Row("what was the most people in the left zone at once?", LOG, _zone_most, "zone"),
    # busiest and the most at once
    Row("when was it busiest?", LOG, _most, "busiest"),
    Row("what time was it busiest today?", LOG, _most, "busiest"),
    Row("how crowded did it get?", LOG, _most, "busiest"),
    Row("what was the peak?", LOG, _most, "most"),
    Row("how many people at most?", LOG, _most, "most"),
    Row("what was the most people at once?", LOG, _most, "most"),
    Row("at most in the last hour?", LOG, _most, "most"),
    Row("what was the maximum number of people in view today?", LOG, _most, "most"),
    # now (the sample video, its first frame)
    Row("how many people?", NOW, _now, "now"),
    Row("how many people are in view now?", NOW, _now, "now"),
    Row("is anyone there right now?", NOW, _now, "now"),
    Row("count the people", NOW, _now, "now"),
    Row("how many people are in the left zone now?", NOW, _zone_now, "zone now"),
    Row("is anyone standing in the left zone right now?", NOW, _zone_now, "zone now"),
    # what ask cannot see
    Row("how many people wore red?", LOG, None, "appearance"),
    Row("what colour was the coat of the man at the door?", LOG, None, "appearance"),
    Row("how many people wore hats?", LOG, None, "appearance"),
    Row("how many women came in?", LOG, None, "appearance"),
    Row("how many children were there?", NOW, None, "appearance"),
    Row("how many dogs walked past?", LOG, None, "animals"),
    Row("how many cats are in view?", NOW, None, "animals"),
    Row("how many cars passed?", LOG, None, "vehicles"),
    Row("how many bicycles crossed the line?", LOG, None, "vehicles"),
    Row("what is the weather like?", NOW, None, "weather"),
    Row("was it raining today?", LOG, None, "weather"),
    Row("why did people leave?", LOG, None, "why"),
    Row("who came in first?", LOG, None, "who"),
    Row("what did they buy?", LOG, None, "other"),
    Row("how tall was the tallest person?", LOG, None, "other"),
    # names the log does not have
    Row("how many came in at the back door?", LOG, None, "unknown name"),
    Row("how busy was the kiosk zone?", LOG, None, "unknown name"),
    Row("how many people came in through the till camera?", LOG, None, "unknown name"),
    # times the log does not hold, or ask cannot read
    Row("how many people came in yesterday?", LOG, None, "period not held"),
    Row("how many came in yesterday afternoon?", LOG, None, "period not held"),
    Row("how many people came in this month?", LOG, None, "period unread"),
    Row("how many came in at 3pm?", LOG, None, "period unread"),
    Row("how many people will come in tomorrow?", LOG, None, "period unread"),
    # a nearby question is not this one
    Row("how many people were there yesterday?", LOG, None, "another quantity"),
    Row("how many people are in view now?", LOG, None, "now without a source"),
)


# Written after the reader was, and run once before anything was changed for them: the
# measure of how the reader does on phrasings it was not built against (the note says the
# first result). Kept as a test like the rest since.
HELD_OUT: tuple[Row, ...] = (
    Row("How many customers came in today?", LOG, _in, "entries"),
    Row("what's the total number of people who walked out?", LOG, _out, "exits"),
    Row("How many people have come in since this morning?", LOG, _in, "entries", hourly=True),
    Row("number of entries in the past hour", LOG, _in, "entries"),
    Row("how many exited during the last 30 minutes?", LOG, _out, "exits"),
    Row("give me the entries and exits", LOG, _both, "crossings"),
    Row("how many people passed through post?", LOG, _both, "crossings"),
    Row("how many people crossed the line in the last 30 minutes?", LOG, _both, "crossings"),
    Row("what's the highest number of people seen at the same time?", LOG, _most, "most"),
    Row("what was the longest anyone stayed in the left zone?", LOG, _dwells, "dwell"),
    Row("how many people came in before noon?", LOG, _in, "entries", hourly=True),
    Row("any people in view at the moment?", NOW, _now, "now"),
    Row("how many persons can you see?", NOW, _now, "now"),
    Row("How many people are in the picture right now?", NOW, _now, "now"),
    Row("how many people wearing glasses came in?", LOG, None, "appearance"),
    Row("how many trucks drove by?", LOG, None, "vehicles"),
    Row("is it sunny?", NOW, None, "weather"),
    Row("how many came in at the front entrance?", LOG, None, "unknown name"),
    Row("how many came in last christmas?", LOG, None, "period unread"),
    Row("how old was the first visitor?", LOG, None, "other"),
    Row("how many came in on the 3rd?", LOG, None, "period unread"),
    Row("what was the quietest time?", LOG, None, "another quantity"),
)


def value_at(answer: dict[str, Any], path: str) -> Any:
    """``answer``'s value at a dotted key path (None where it is not)."""
    found: Any = answer
    for key in path.split("."):
        if not isinstance(found, dict) or key not in found:
            return None
        found = found[key]
    return found


RIGHT, REFUSED, WRONG = "right", "refused", "wrong"


def judge(
    row: Row, truth: Truth, code: int, answers: list[dict[str, Any]] | None, text: str
) -> tuple[str, str]:
    """The verdict on one asked row, and why: ``answers`` are the tools' answers (the last
    one decides; None: not known, the text alone is judged), ``text`` what was said on
    stdout (its figures checked too, when given)."""
    if row.probe is None:
        if code == 4:
            return RIGHT, "refused"
        return WRONG, f"answered (exit {code}): {text.strip()[:120]}"
    if code == 4:
        return REFUSED, text.strip()[:160]
    if code != 0:
        return WRONG, f"exit {code}: {text.strip()[:120]}"
    answer = next((a for a in reversed(answers or []) if a.get("status") != "started"), {})
    for path, expected in row.probe(truth):
        got = value_at(answer, path)
        if answers is not None and got != expected:
            return WRONG, f"{path} is {got!r}, not {expected} ({text.strip()[:100]})"
        if text and str(expected) not in text:
            return WRONG, f"the answer does not say {expected}: {text.strip()[:100]}"
    return RIGHT, text.strip()[:100]


__all__ = [
    "HELD_OUT",
    "LOG",
    "NOW",
    "REFUSED",
    "RIGHT",
    "ROWS",
    "RUN_FLAGS",
    "WRONG",
    "ZONE",
    "Row",
    "Truth",
    "judge",
    "truth_of",
    "value_at",
]
