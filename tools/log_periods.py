"""The log a ``lookout ask`` question reads, and the periods it names, in the log's own time.

A log is an SQLite database (``--db``) or JSON lines (``--events``): both read the same
(``read_runs``; only ``lookout run`` runs count, not an older ``ask``'s). A period is ``all``
(the whole log), ``today``, ``yesterday``, ``since 9`` / ``since 9:30``, ``last N minutes`` /
``last N hours``, a part of a day (``today 09:00-12:00``, ``yesterday 17:00-22:00``), a
weekday (``monday``: the latest one, today included) or ``since monday`` (``window``). The
log's "now" is the wall clock while its newest run is a camera, else the end of its newest
run (a recording is asked about as it was logged); its time zone is that of the newest
run's start (``started``, with its offset). A period the log holds nothing of is refused,
saying what it covers (never answered as none came); one it holds part of is answered with
what it covers (``covered``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from live.tool import ToolUnavailable
from live.util.walltime import wall_time

PERIODS = (
    "'all', 'today', 'yesterday', 'since 9' or 'since 9:30' (today, the log's local time), "
    "'last N minutes' or 'last N hours'"
)
_SINCE = re.compile(r"^since\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$", re.I)
_LAST = re.compile(
    r"^(?:the\s+)?(?:last|past)\s+(\d+(?:\.\d+)?)?\s*(minutes?|mins?|hours?|h)$", re.I
)
_PART = re.compile(r"^(today|yesterday)\s+(\d{2}):(\d{2})-(\d{2}):(\d{2})$")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


class LogUnavailable(ToolUnavailable):
    """The log cannot answer this (none given, no run, a period that cannot be read)."""


@dataclass
class LoggedRun:
    info: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def live(self) -> bool:
        return self.info.get("live") is not False

    def wall(self, event: dict[str, Any]) -> float | None:
        steps = [e for e in self.events if e["type"] == "clock_step"]
        return wall_time(float(event["t"]), self.info, steps)


def _tz(info: dict[str, Any]) -> tzinfo:
    started = str(info.get("started", ""))
    try:
        found = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z").tzinfo
    except ValueError:
        found = None
    return found or datetime.now().astimezone().tzinfo or UTC


def read_runs(path: Path) -> list[LoggedRun]:
    """The ``lookout run`` runs of a log (SQLite or JSONL), oldest first."""
    from device.app.report.data import ReportError, load_events, split_runs

    try:
        events = load_events(path)
    except ReportError as exc:
        raise LogUnavailable(str(exc)) from None
    runs = [
        LoggedRun(run.info, run.events)
        for run in split_runs(events)
        if run.info is not None and run.info.get("command", "run") == "run"
    ]
    if not runs:
        raise LogUnavailable(
            f"{path} has no lookout run in it: run lookout run --db {path} (with --line and "
            "--zone for crossings and zones) first"
        )
    return runs


@dataclass
class Window:
    period: str
    start: float  # seconds since the epoch
    end: float
    tz: tzinfo

    def describe(self) -> dict[str, Any]:
        def local(t: float) -> str:
            return datetime.fromtimestamp(t, self.tz).strftime("%Y-%m-%d %H:%M:%S")

        return {"period": self.period, "from": local(self.start), "to": local(self.end)}


def log_now(runs: list[LoggedRun], wall: Callable[[], float]) -> float:
    newest = runs[-1]
    if newest.live:
        return wall()
    times = [w for e in newest.events if (w := newest.wall(e)) is not None]
    return max(times) if times else wall()


def window(period: str, runs: list[LoggedRun], wall: Callable[[], float]) -> Window:
    """The range ``period`` names, in the log's local days; LogUnavailable if unreadable."""
    tz = _tz(runs[-1].info)
    now = log_now(runs, wall)
    said = " ".join(period.strip().lower().split()) or "all"
    day = datetime.fromtimestamp(now, tz).replace(hour=0, minute=0, second=0, microsecond=0)
    if said in {"all", "ever", "the whole log", "everything"}:
        first = min(
            (w for run in runs for e in run.events[:1] if (w := run.wall(e)) is not None),
            default=now,
        )
        return Window("all", first, now, tz)
    if said == "today":
        return Window(said, day.timestamp(), now, tz)
    if said == "yesterday":
        return Window(said, (day - timedelta(days=1)).timestamp(), day.timestamp(), tz)
    if match := _SINCE.match(said):
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if match.group(3):
            hour = hour % 12 + (12 if match.group(3).lower() == "pm" else 0)
        if hour > 23 or minute > 59:
            raise LogUnavailable(f"cannot read the time in {period!r}")
        start = day.replace(hour=hour, minute=minute).timestamp()
        if start > now:
            raise LogUnavailable(
                f"{hour:02d}:{minute:02d} has not come yet today in the log's time (it is "
                f"{datetime.fromtimestamp(now, tz):%H:%M} there)"
            )
        return Window(said, start, now, tz)
    if match := _LAST.match(said):
        value = float(match.group(1) or 1)
        span = value * (3600 if match.group(2).lower().startswith("h") else 60)
        return Window(said, now - span, now, tz)
    if match := _PART.match(said):
        base = day - timedelta(days=1 if match.group(1) == "yesterday" else 0)
        start_h, start_m, end_h, end_m = (int(match.group(k)) for k in range(2, 6))
        if start_h > 23 or end_h > 24 or start_m > 59 or end_m > 59:
            raise LogUnavailable(f"cannot read the time in {period!r}")
        begins = base + timedelta(hours=start_h, minutes=start_m)
        ends = base + timedelta(hours=end_h, minutes=end_m)
        if ends <= begins:
            raise LogUnavailable(f"{period!r} ends before it starts")
        if begins.timestamp() > now:
            raise LogUnavailable(
                f"{begins:%H:%M} has not come yet in the log's day (it is "
                f"{datetime.fromtimestamp(now, tz):%H:%M} there)"
            )
        return Window(said, begins.timestamp(), min(ends.timestamp(), now), tz)
    if said.startswith("since ") and said[6:] in WEEKDAYS:
        back = (day.weekday() - WEEKDAYS.index(said[6:])) % 7
        return Window(said, (day - timedelta(days=back)).timestamp(), now, tz)
    if said in WEEKDAYS:
        back = (day.weekday() - WEEKDAYS.index(said)) % 7
        that_day = day - timedelta(days=back)
        last = min((that_day + timedelta(days=1)).timestamp(), now)
        return Window(said, that_day.timestamp(), last, tz)
    raise LogUnavailable(f"cannot read the period {period!r}: say one of {PERIODS}")


def covered(runs: list[LoggedRun], w: Window) -> Window:
    """The part of ``w`` the log's runs cover; LogUnavailable when they cover none of it
    (a period the log holds nothing of is not a period in which nobody came)."""
    spans = [span for run in runs if (span := run_span(run)) is not None]
    start = max(w.start, min((a for a, _ in spans), default=w.start))
    end = min(w.end, max((b for _, b in spans), default=w.end))
    inside = [(max(a, w.start), min(b, w.end)) for a, b in spans if a <= w.end and b >= w.start]
    if not inside:
        said = w.describe()
        held = ", ".join(
            f"{Window('', a, b, w.tz).describe()['from']} to "
            f"{Window('', a, b, w.tz).describe()['to']}"
            for a, b in spans[-3:]
        )
        raise LogUnavailable(
            f"the log holds nothing from {said['period']} ({said['from']} to {said['to']}): "
            f"it covers {held or 'no time at all'}"
        )
    start, end = min(a for a, _ in inside), max(b for _, b in inside)
    return Window(w.period, start, end, w.tz)


def run_span(run: LoggedRun) -> tuple[float, float] | None:
    """When a run looked, on the wall clock: its first event to its last."""
    times = [w for e in run.events if (w := run.wall(e)) is not None]
    return (min(times), max(times)) if times else None


__all__ = [
    "PERIODS",
    "LogUnavailable",
    "LoggedRun",
    "Window",
    "covered",
    "log_now",
    "read_runs",
    "run_span",
    "window",
]
