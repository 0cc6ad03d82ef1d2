"""Request-response tools of ``lookout ask`` that answer from the event log (``--db``).

They read the log read-only (``device/app/report/data.py:load_events``) and answer over a
time range said in words, in the log's own local days and hours:

* ``crossings(period)``: entries and exits per counting line;
* ``zone_visits(period, zone)``: per zone, the people who came in, the dwell events, the
  longest stay and the most people in it at once;
* ``busiest(period)``: the minute with the highest count (the max of the per-minute counts);
* ``cannot_answer(reason, would_answer)``: the model says the question cannot be answered
  with these tools, and what would answer it (``lookout ask`` exits 4).

A period is ``all`` (the whole log), ``today``, ``yesterday``, ``since 9`` / ``since 9:30``,
``last N minutes`` / ``last N hours``, a part of a day (``today 09:00-12:00``,
``yesterday 17:00-22:00``), a weekday (``monday``: the latest one, today included) or
``since monday``. The
log's "now" is the wall clock while its newest run is a camera, else the end of its newest
run (a recording is asked about as it was logged). Its time zone is that of the newest
run's start (``started``, with its offset). A period the log holds nothing of is refused,
saying what it covers (never answered as none came); one it holds part of is answered
with what it covers. Only ``lookout run`` runs count (the log of an older ``ask`` has its
own runs in it, skipped). A log is an SQLite database (``--db``) or JSON lines
(``--events``): both read the same. The tools declare the log's cameras, lines and zones
as enums, read once before the question is asked (``names``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from pydantic import Field

from live.tool import Tool, ToolUnavailable
from live.util.walltime import wall_time
from tools.choices import with_choices
from tools.function_tool import FunctionTool
from tools.log_cameras import each_camera, log_cameras

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


def _within(run: LoggedRun, event: dict[str, Any], w: Window) -> bool:
    at = run.wall(event)
    return at is not None and w.start <= at <= w.end


PeriodArg = Annotated[str, Field(description=f"the time range: {PERIODS}")]
DirectionArg = Annotated[
    Literal["both", "in", "out"],
    Field(description="'in': entries only, 'out': exits only, 'both': each"),
]
CameraArg = Annotated[
    str,
    Field(
        description="the camera asked about: its name, or a line or zone of it ('door'); "
        "empty: each camera, and in total"
    ),
]


def _crossings(runs: list[LoggedRun], w: Window, line: str = "") -> dict[str, Any]:
    lines: dict[str, dict[str, int]] = {}
    for run in runs:
        config = run.info.get("config") or {}
        for name in config.get("lines") or {}:
            lines.setdefault(str(name), {"in": 0, "out": 0})
    total = 0
    removed = _removed_lines(runs)
    for run in runs:
        for e in run.events:
            if (
                e["type"] == "crossing"
                and e.get("direction") in ("in", "out")
                and _within(run, e, w)
            ):
                lines.setdefault(str(e.get("line")), {"in": 0, "out": 0})[e["direction"]] += 1
                total += 1
    if not lines:
        raise LogUnavailable(
            "no run in this log counted a line: lookout run --line NAME=X1,Y1,X2,Y2 --db"
        )
    if line:
        if line not in lines:
            raise LogUnavailable(f"no line {line!r} in this log (lines: {', '.join(lines)})")
        lines = {line: lines[line]}
        total = lines[line]["in"] + lines[line]["out"]
    else:
        # A line drawn and then removed that counted nobody is not a line of the answer.
        lines = {k: v for k, v in lines.items() if k not in removed or v["in"] or v["out"]}
    return {"lines": lines, "crossings": total}


def _removed_lines(runs: list[LoggedRun]) -> set[str]:
    """Lines a scene edit removed (and did not bring back) in the log's runs."""
    removed: set[str] = set()
    for run in runs:
        ever = set((run.info.get("config") or {}).get("lines") or {})
        last: set[str] | None = None
        for e in run.events:
            if e["type"] == "scene" and isinstance(e.get("lines"), dict):
                last = set(e["lines"])
                ever |= last
        if last is not None:
            removed |= ever - last
    return removed


def _zone_visits(runs: list[LoggedRun], w: Window, zone: str) -> dict[str, Any]:
    zones: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        return zones.setdefault(
            name, {"visits": 0, "dwell_events": 0, "longest_s": 0.0, "max_people": 0}
        )

    for run in runs:
        config = run.info.get("config") or {}
        for name in config.get("zones") or {}:
            row(str(name))
        for e in run.events:
            if e["type"] not in ("zone", "dwell") or not _within(run, e, w):
                continue
            r = row(str(e.get("zone")))
            if e["type"] == "dwell":
                r["dwell_events"] += 1
                r["longest_s"] = max(r["longest_s"], round(float(e.get("seconds", 0)), 1))
                continue
            people, previous = e.get("people"), e.get("previous")
            if isinstance(people, int):
                r["max_people"] = max(r["max_people"], people)
                if isinstance(previous, int) and people > previous:
                    r["visits"] += people - previous
                elif previous is None and people > 0:
                    r["visits"] += people
            longest = e.get("longest_s")
            if isinstance(longest, int | float):
                r["longest_s"] = max(r["longest_s"], round(float(longest), 1))
    if zone:
        if zone not in zones:
            known = ", ".join(zones) or "none"
            raise LogUnavailable(f"no zone {zone!r} in this log (zones: {known})")
        zones = {zone: zones[zone]}
    if not zones:
        raise LogUnavailable(
            "no run in this log watched a zone: lookout run --zone NAME=X1,Y1,X2,Y2,... --db"
        )
    return {"zones": zones}


def _busiest(runs: list[LoggedRun], w: Window) -> dict[str, Any]:
    per_minute: dict[tuple[int, int], tuple[int, dict[str, Any], LoggedRun]] = {}
    for i, run in enumerate(runs):
        for e in run.events:
            if e["type"] != "count" or not isinstance(e.get("count"), int):
                continue
            at = run.wall(e)
            if at is None or not w.start <= at <= w.end:
                continue
            media = e.get("t_media")
            if not run.live and isinstance(media, int | float):
                key = (i, int(media // 60))  # a recording: minutes of the recording
            else:
                key = (i, int(at // 60))
            if key not in per_minute or e["count"] > per_minute[key][0]:
                per_minute[key] = (int(e["count"]), e, run)
    if not per_minute:
        raise LogUnavailable(f"the log has no counts in {w.period!r} ({w.describe()['from']}"
                             f" to {w.describe()['to']})")  # fmt: skip
    (_, minute), (people, event, run) = max(
        per_minute.items(), key=lambda item: (item[1][0], -item[0][1])
    )
    media = event.get("t_media")
    if run.live:
        start = Window(w.period, minute * 60.0, minute * 60.0 + 60.0, w.tz).describe()
        span: dict[str, Any] = {"minute_from": start["from"], "minute_to": start["to"]}
    else:
        # A recording's own time, its last minute ending with it (never past its end).
        length = max(
            (float(e["t_media"]) for e in run.events if isinstance(e.get("t_media"), int | float)),
            default=minute * 60.0 + 60.0,
        )
        span = {
            "minute_from": clock_of(minute * 60.0),
            "minute_to": clock_of(min(minute * 60.0 + 60.0, length)),
            "length": clock_of(length),
        }
    return {
        "people": people,
        **span,
        "source": Path(str(run.info.get("source", ""))).name,
        "t_media": None if run.live or media is None else round(float(media), 1),
        "minutes": len(per_minute),
    }


@dataclass(frozen=True)
class LogNames:
    """The cameras, lines and zones a log holds (what its tools declare as enums)."""

    cameras: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()


def log_names(runs: list[LoggedRun]) -> LogNames:
    lines: list[str] = []
    zones: list[str] = []
    for run in runs:
        config = run.info.get("config") or {}
        found_lines = [*(config.get("lines") or {})]
        found_zones = [*(config.get("zones") or {})]
        for e in run.events:
            if e["type"] == "crossing" and e.get("line"):
                found_lines.append(str(e["line"]))
            elif e["type"] in ("zone", "dwell") and e.get("zone"):
                found_zones.append(str(e["zone"]))
            elif e["type"] == "scene":
                found_lines.extend(str(n) for n in e.get("lines") or {})
                found_zones.extend(str(n) for n in e.get("zones") or {})
        lines.extend(n for n in found_lines if n not in lines)
        zones.extend(n for n in found_zones if n not in zones)
    cameras = [c for c in log_cameras(runs) if c != "main" or len(log_cameras(runs)) > 1]
    return LogNames(tuple(cameras), tuple(lines), tuple(zones))


def clock_of(seconds: float) -> str:
    """Seconds into a recording as people read them: ``1:05``, ``1:02:03``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


@dataclass
class LogTools:
    """``crossings``, ``zone_visits``, ``busiest`` over ``log``, and ``cannot_answer``.

    ``log``: the run's log, SQLite (``--db``) or JSON lines (``--events``), read once
    (``load``) before a question is asked; None: no log, each tool says so."""

    log: Path | None
    wall: Callable[[], float] = time.time
    runs: list[LoggedRun] | None = None
    failure: str = ""  # why the log could not be read (said by every tool)

    def load(self) -> LogNames:
        """Read the log (blocking: from a worker thread); the names its tools declare."""
        if self.log is None:
            return LogNames()
        try:
            self.runs = read_runs(self.log)
        except LogUnavailable as exc:
            self.failure = str(exc)
            return LogNames()
        return log_names(self.runs)

    def tools(self, names: LogNames | None = None) -> list[Tool]:
        names = names or LogNames()
        choices = {"camera": names.cameras, "line": names.lines, "zone": names.zones}
        return [
            FunctionTool(with_choices(self.crossings, choices)),
            FunctionTool(with_choices(self.zone_visits, choices)),
            FunctionTool(with_choices(self.busiest, choices)),
            FunctionTool(self.cannot_answer),
        ]

    async def _read(self, period: str) -> tuple[list[LoggedRun], Window]:
        if self.log is None:
            raise LogUnavailable(
                "no event log to read: ask with --db PATH or --events PATH (the log "
                "lookout run wrote)"
            )
        if self.runs is None and not self.failure:
            await anyio.to_thread.run_sync(self.load)
        if self.runs is None:
            raise LogUnavailable(self.failure)
        runs = self.runs
        return runs, covered(runs, window(period, runs, self.wall))

    async def crossings(
        self,
        period: PeriodArg = "all",
        camera: CameraArg = "",
        line: Annotated[str, Field(description="one line's name; empty: every line")] = "",
        direction: DirectionArg = "both",
    ) -> dict[str, Any]:
        """Entries ("in") and exits ("out") per counting line in a time range of the log.

        Returns {"period", "from", "to", "lines": {name: {"in": n, "out": m}}, "crossings"};
        with ``line``, that line's alone; ``direction`` says which the question asked for
        (both are counted); on a log of several cameras, with ``camera`` for one, or each
        camera's ("cameras": {camera: {"lines", "crossings"}}) and the total ("total":
        {"in", "out"}).
        """
        runs, w = await self._read(period)
        place = camera or line or ""
        found = each_camera(runs, place, lambda share: _crossings(share, w, line or ""))
        if "cameras" in found:
            lines = [c for one in found["cameras"].values() for c in one["lines"].values()]
            found["total"] = {
                "in": sum(c["in"] for c in lines),
                "out": sum(c["out"] for c in lines),
            }
            found["crossings"] = sum(one["crossings"] for one in found["cameras"].values())
        return {**w.describe(), "direction": direction or "both", **found}

    async def zone_visits(
        self,
        period: PeriodArg = "all",
        zone: Annotated[str, Field(description="one zone's name; empty: every zone")] = "",
        camera: CameraArg = "",
    ) -> dict[str, Any]:
        """Per zone in a time range of the log: people who came in (visits), dwell events
        (people who stayed past the zone's dwell time), the longest stay seen and the most
        people in it at once.

        Returns {"period", "from", "to", "zones": {name: {"visits", "dwell_events",
        "longest_s", "max_people"}}}; on a log of several cameras, with ``camera`` for
        one, or each camera's ("cameras": {camera: {"zones"}}) and the total ("total":
        {"visits", "dwell_events"}). A zone that is a camera's name is taken as the camera.
        """
        runs, w = await self._read(period)
        zone, camera = zone or "", camera or ""
        if zone and not camera and zone in log_cameras(runs):
            zone, camera = "", zone  # "at the till": the camera, where no zone has that name
        found = each_camera(runs, camera or zone, lambda share: _zone_visits(share, w, zone))
        if "cameras" in found:
            zones = [z for one in found["cameras"].values() for z in one["zones"].values()]
            found["total"] = {
                "visits": sum(z["visits"] for z in zones),
                "dwell_events": sum(z["dwell_events"] for z in zones),
            }
        return {**w.describe(), **found}

    async def busiest(self, period: PeriodArg = "all", camera: CameraArg = "") -> dict[str, Any]:
        """The busiest minute in a time range of the log: the minute whose highest count of
        people in view is the highest (the first such minute); that count is also the most
        people in view at once over the range.

        Returns {"period", "from", "to", "people", "minute_from", "minute_to", "source",
        "t_media" (seconds into a recording, null for a camera), "minutes"}; for a
        recording, "minute_from"/"minute_to"/"length" are its own time as m:ss (the last
        minute ends with it); on a log of several cameras, with ``camera`` for one, or each
        camera's ("cameras") and the busiest of them ("total": its answer and its "camera").
        """
        runs, w = await self._read(period)
        found = each_camera(runs, camera or "", lambda share: _busiest(share, w))
        if "cameras" in found:
            name, top = max(found["cameras"].items(), key=lambda item: item[1]["people"])
            found["total"] = {"camera": name, **top}
        return {**w.describe(), **found}

    def cannot_answer(
        self,
        reason: Annotated[str, Field(description="why these tools cannot answer it")],
        would_answer: Annotated[str, Field(description="what would answer it")] = "",
    ) -> dict[str, Any]:
        """Say that the question cannot be answered with these tools (instead of answering
        another question), why, and what would answer it."""
        return {"status": "unanswered", "reason": reason, "would_answer": would_answer}


__all__ = ["PERIODS", "LogNames", "LogTools", "LogUnavailable", "log_names", "read_runs", "window"]
