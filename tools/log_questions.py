"""Request-response tools of ``lookout ask`` that answer from the event log (``--db``).

They read the log read-only (``device/app/report/data.py:load_events``) and answer over a
time range said in words, in the log's own local days and hours:

* ``crossings(period)``: entries and exits per counting line;
* ``zone_visits(period, zone)``: per zone, the people who came in, the dwell events, the
  longest stay and the most people in it at once;
* ``busiest(period)``: the minute with the highest count (the max of the per-minute counts);
* ``cannot_answer(reason, would_answer)``: the model says the question cannot be answered
  with these tools, and what would answer it (``lookout ask`` exits 4).

The log's runs and the periods a question names (``all``, ``today``, ``since 9``, ``last N
minutes``, ...) are ``tools/log_periods.py``'s: a period the log holds nothing of is refused,
saying what it covers. The tools declare the log's cameras, lines and zones as enums, read
once before the question is asked (``names``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from pydantic import Field

from live.tool import Tool
from tools.choices import with_choices
from tools.function_tool import FunctionTool
from tools.log_cameras import each_camera, log_cameras
from tools.log_periods import (
    PERIODS,
    LoggedRun,
    LogUnavailable,
    Window,
    covered,
    read_runs,
    window,
)


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
    found = log_cameras(runs)
    cameras = [c for c in found if c != "main" or len(found) > 1]
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


__all__ = ["LogNames", "LogTools", "log_names"]
