"""What the offline model says of the log tools' answers (``tools/log_questions.py``),
shaped by the question it read (``models/local/question.py``): entries alone when entries
were asked, the most at once when that was, a recording's own time for a recording."""

from __future__ import annotations

from typing import Any

from models.local.question import Query, What
from models.local.times import WEEKDAYS

CROSSINGS = "crossings"
ZONES = "zone_visits"
BUSIEST = "busiest"
LOG_TOOLS = (CROSSINGS, ZONES, BUSIEST)


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def what_i_answer(declared: set[str]) -> str:
    can = []
    if "count_people_now" in declared:
        can.append("how many people are in view now (or in a zone)")
    if "start_occupancy_report" in declared:
        can.append("a report over the next minutes")
    if CROSSINGS in declared or "visitors" in declared:
        can.append("how many came in or went out per line")
    if ZONES in declared:
        can.append("visits and dwell per zone")
    if BUSIEST in declared:
        can.append("the busiest minute and the most people at once")
    ranges = (
        " (over 'today', 'yesterday', 'this morning', 'since 9', 'between 9 and 11', "
        "'the last N minutes/hours', a weekday, or the whole log)"
        if CROSSINGS in declared
        else ""
    )
    return "I can answer " + ", ".join(can) + ranges if can else "I have no tools here"


def log_answer(name: str, payload: dict[str, Any], query: Query | None = None) -> str:
    """What an answer of ``crossings``, ``zone_visits`` or ``busiest`` says: of the log's
    one camera, of the camera asked about, or of each camera and in total."""
    cameras = payload.get("cameras")
    if isinstance(cameras, dict):
        each = " | ".join(f"{camera}: {_said(name, one, query)}" for camera, one in cameras.items())
        return f"{_range(payload)}: {each} | in total: {_total(name, payload, query)}."
    camera = f", camera {payload['camera']}" if payload.get("camera") else ""
    joint = ", " if name == BUSIEST else ": "
    return f"{_range(payload)}{camera}{joint}{_said(name, payload, query)}."


def _direction(payload: dict[str, Any], query: Query | None) -> str:
    return query.direction if query is not None and query.direction else ""


def lines_said(lines: dict[str, Any], direction: str) -> str:
    """Each line's entries ("in"), exits ("out") or both (""), as the question asked."""
    counted = lines.items()
    if direction == "in":
        said = "; ".join(f"{c.get('in', 0)} came in at {line}" for line, c in counted)
    elif direction == "out":
        said = "; ".join(f"{c.get('out', 0)} went out at {line}" for line, c in counted)
    else:
        said = "; ".join(
            f"{line}: {c.get('in', 0)} in, {c.get('out', 0)} out" for line, c in counted
        )
    return said or "no lines"


def _said(name: str, payload: dict[str, Any], query: Query | None) -> str:
    if name == CROSSINGS:
        return lines_said(payload.get("lines") or {}, _direction(payload, query))
    if name == ZONES:
        zones = "; ".join(
            f"{zone}: {z.get('visits', 0)} came in, {z.get('dwell_events', 0)} stayed past "
            f"the dwell time (longest {float(z.get('longest_s', 0)):.0f} s), at most "
            f"{people(int(z.get('max_people', 0)))} at once"
            for zone, z in (payload.get("zones") or {}).items()
        )
        return zones or "no zones"
    if name == BUSIEST:
        start, end = str(payload.get("minute_from")), str(payload.get("minute_to"))
        if payload.get("length") is not None:  # a recording: its own time
            where = f"{start}-{end}"
            if str(payload.get("period", "all")) != "all":  # else the range names it
                where += f" of {payload.get('source')}"
        else:
            where = f"{start[11:16]}-{end[11:16]}"
        count = people(int(payload.get("people", 0)))
        if query is not None and query.what is What.MOST:
            return f"at most {count} in view at once (in the minute {where})"
        return f"the busiest minute was {where}: {count} in view"
    return ""


def _total(name: str, payload: dict[str, Any], query: Query | None) -> str:
    total = payload.get("total") or {}
    if name == CROSSINGS:
        direction = _direction(payload, query)
        if direction == "in":
            return f"{total.get('in', 0)} came in"
        if direction == "out":
            return f"{total.get('out', 0)} went out"
        return f"{total.get('in', 0)} in, {total.get('out', 0)} out"
    if name == ZONES:
        return (
            f"{total.get('visits', 0)} came in, {total.get('dwell_events', 0)} stayed past "
            "the dwell time"
        )
    return f"the busiest was {total.get('camera')}, {people(int(total.get('people', 0)))}"


def _range(payload: dict[str, Any]) -> str:
    period = str(payload.get("period", "all"))
    if payload.get("length") is not None and period == "all":
        return f"In {payload.get('source') or 'the recording'} (0:00-{payload['length']})"
    span = f"{payload.get('from', '?')} to {payload.get('to', '?')}"
    return f"In the whole log ({span})" if period == "all" else f"{said_period(period)} ({span})"


def said_period(period: str) -> str:
    """A log tool's period as a sentence starts: "In the last hour", "Since 09:00"."""
    words = period.split()
    if words[:1] == ["last"] and len(words) == 3:
        value, unit = float(words[1]), words[2].rstrip("s")
        return f"In the last {unit}" if value == 1 else f"In the last {value:g} {unit}s"
    if words and words[0] in WEEKDAYS:
        return f"On {words[0].capitalize()}"
    return period[:1].upper() + period[1:]


__all__ = ["LOG_TOOLS", "lines_said", "log_answer", "people", "what_i_answer"]
