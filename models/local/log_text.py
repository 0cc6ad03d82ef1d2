"""The offline model's questions about the log: the range a question names, and what the
log tools' answers say (``tools/log_questions.py``)."""

from __future__ import annotations

import re
from typing import Any

CROSSINGS = "crossings"
ZONES = "zone_visits"
BUSIEST = "busiest"
LOG_TOOLS = (CROSSINGS, ZONES, BUSIEST)
_DURATION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(h|hours?|m|min|mins|minutes?|s|sec|secs|seconds?)\b", re.I
)
_LAST_UNIT = re.compile(r"\b(?:last|past|previous)\s+(hour|minute|day)\b", re.I)
# Days, hours and ranges the log's tools read (tools/log_questions.py:window).
DAY = re.compile(r"\b(today|yesterday)\b", re.I)
SINCE = re.compile(r"\bsince\s+(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)", re.I)
# Time words it cannot read into a range: said as such, never read as another range.
_OTHER_TIMES = re.compile(
    r"\b(week|weekend|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|morning|afternoon|evening|night|noon|midnight|between|until|before|after|ago"
    r"|o'clock|\d{1,2}:\d{2}|\d{1,2}\s*(?:am|pm)|tomorrow|day)\b",
    re.I,
)


# "the door camera", "camera door": a camera named as such.
_CAMERA_NAME = re.compile(r"\b(?:camera\s+([a-z][\w-]*)|([a-z][\w-]*)\s+camera)\b", re.I)
_NOT_CAMERAS = {"the", "a", "any", "each", "every", "which", "this", "that", "all"}
# "at the door": a camera, or a line or zone of one. Overlapping (a lookahead): "came in
# at the door" is at the door.
# Said with "the" only: "in a day", "in during the hour" name no place.
_PLACE = re.compile(r"\b(?=(?:at|in|inside|on|by)\s+the\s+([a-z][\w-]*))", re.I)
_NOT_PLACES = {"last", "past", "previous", "morning", "afternoon", "evening", "today", "zone",
               "view", "total", "whole", "log", "day", "hour", "minute"}  # fmt: skip


def camera_in(text: str) -> str:
    """The camera a question names as such ("the till camera"), "" for none."""
    names = [a or b for a, b in _CAMERA_NAME.findall(text)]
    return next((n for n in names if n.lower() not in _NOT_CAMERAS), "")


def with_place(text: str) -> dict[str, str]:
    """The ``camera`` argument of a question about the log that names a camera, line or
    zone ("at the door", "the till camera"); none for one that names none. The log tools
    resolve it against the log's cameras (``tools/log_cameras.py``)."""
    place = camera_in(text)
    if not place:
        places = [m for m in _PLACE.findall(text) if m.lower() not in _NOT_PLACES]
        place = places[0] if places else ""
    return {"camera": place} if place else {}


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n} people"


def period_in(text: str) -> str | None:
    """The range a question about the log names, as the log tools read it ("all" when it
    names none); None when it names one they cannot read."""
    rest = text
    found = "all"
    if match := DAY.search(text):
        found, rest = match.group(1).lower(), text.replace(match.group(0), " ")
    elif match := SINCE.search(text):
        found, rest = f"since {match.group(1).strip()}", text.replace(match.group(0), " ")
    elif match := _DURATION.search(text):
        unit = "hours" if match.group(2).lower().startswith("h") else "minutes"
        if match.group(2).lower().startswith("s"):
            return None
        found, rest = f"last {match.group(1)} {unit}", text.replace(match.group(0), " ")
    elif match := _LAST_UNIT.search(text):
        unit = match.group(1).lower()
        if unit == "day":
            return None
        found, rest = f"last 1 {unit}s", text.replace(match.group(0), " ")
    return None if _OTHER_TIMES.search(rest) else found


def what_i_answer(declared: set[str]) -> str:
    can = []
    if "count_people_now" in declared:
        can.append("how many people are in view now")
    if "start_occupancy_report" in declared:
        can.append("a report over the next minutes")
    if CROSSINGS in declared or "visitors" in declared:
        can.append("entries and exits per line")
    if ZONES in declared:
        can.append("visits and dwell per zone")
    if BUSIEST in declared:
        can.append("the busiest minute")
    ranges = (
        " (over 'today', 'yesterday', 'since 9', 'the last N minutes/hours' of the log)"
        if CROSSINGS in declared
        else ""
    )
    return "I can answer " + ", ".join(can) + ranges if can else "I have no tools here"


def log_answer(name: str, payload: dict[str, Any]) -> str:
    """What an answer of ``crossings``, ``zone_visits`` or ``busiest`` says: of the log's
    one camera, of the camera asked about, or of each camera and in total."""
    cameras = payload.get("cameras")
    if isinstance(cameras, dict):
        each = " | ".join(f"{camera}: {_said(name, one)}" for camera, one in cameras.items())
        return f"{_range(payload)}: {each} | in total: {_total(name, payload)}."
    camera = f", camera {payload['camera']}" if payload.get("camera") else ""
    joint = ", " if name == BUSIEST else ": "
    return f"{_range(payload)}{camera}{joint}{_said(name, payload)}."


def _said(name: str, payload: dict[str, Any]) -> str:
    if name == CROSSINGS:
        lines = "; ".join(
            f"{line}: {c.get('in', 0)} in, {c.get('out', 0)} out"
            for line, c in (payload.get("lines") or {}).items()
        )
        return lines or "no lines"
    if name == ZONES:
        zones = "; ".join(
            f"{zone}: {z.get('visits', 0)} came in, {z.get('dwell_events', 0)} stayed past "
            f"the dwell time (longest {float(z.get('longest_s', 0)):.0f} s), at most "
            f"{people(int(z.get('max_people', 0)))} at once"
            for zone, z in (payload.get("zones") or {}).items()
        )
        return zones or "no zones"
    if name == BUSIEST:
        media = payload.get("t_media")
        where = (
            f"{payload.get('minute_from')}-{payload.get('minute_to')} of "
            f"{payload.get('source')} (at {float(media):.1f} s)"
            if media is not None
            else f"{str(payload.get('minute_from'))[11:16]}-{str(payload.get('minute_to'))[11:16]}"
        )
        return f"the busiest minute was {where}: {people(int(payload.get('people', 0)))} in view"
    return ""


def _total(name: str, payload: dict[str, Any]) -> str:
    total = payload.get("total") or {}
    if name == CROSSINGS:
        return f"{total.get('in', 0)} in, {total.get('out', 0)} out"
    if name == ZONES:
        return (
            f"{total.get('visits', 0)} came in, {total.get('dwell_events', 0)} stayed past "
            "the dwell time"
        )
    return f"the busiest was {total.get('camera')}, {people(int(total.get('people', 0)))}"


def _range(payload: dict[str, Any]) -> str:
    period = str(payload.get("period", "all"))
    span = f"{payload.get('from', '?')} to {payload.get('to', '?')}"
    return f"In the whole log ({span})" if period == "all" else f"{period.capitalize()} ({span})"


__all__ = ["LOG_TOOLS", "camera_in", "log_answer", "period_in", "what_i_answer", "with_place"]
