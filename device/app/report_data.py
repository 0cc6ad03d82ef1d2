"""What ``lookout report`` reads and works out: events, runs, the count over time, figures.

Input: the JSON-lines file of ``--events`` or the SQLite log of ``--db``.

A log may hold several runs: each starts with a ``run`` event (its id, wall-clock
start, source and configuration); older logs without one are split where their
times start again from 0. Each run is placed on its own time axis:

- **media time** for a file or a folder, so that an 80 s video replayed in 6 s
  with ``--pace fast`` reads as 80 s of video (events between frames are placed
  between the frames' media times);
- **wall-clock time** for a camera (the run's start plus the session time);
- session time for logs that do not say what their source was.

The count is a step function: each ``count`` event holds until the next one,
until it becomes unknown (a ``count`` event with a null count, or the source
leaving the running state), or until the run ends. (Logs written before the
device counted on its own carry per-call counts, which end when their
``count_people`` call stops.) Time-weighted figures (mean occupancy, time with
nobody / somebody) integrate over the spans where the count is known, in the
run's own time; nothing is assumed before the first count.

Lines and zones (``crossing``, ``zone``, ``dwell`` events; the names also from the
run events' configuration) are counted per period of the same axis (``build_scene``):
entries and exits per line, and per zone the time-weighted mean and the max of its
people (each ``zone`` count holds like the count does) and the dwell events.
``read_line_runs`` reads a ``--db`` log's crossings for ``lookout ask``'s ``visitors``.
"""

from __future__ import annotations

import bisect
import itertools
import json
import logging
import math
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"
COUNT_TOOL = "count_people"
# Times can step back a little within one run (an event stamped by its producer);
# a larger jump back means a new run was appended to the same file.
NEW_RUN_BACKSTEP_S = 0.5
MEDIA, WALL, SESSION = "media", "wall", "session"

log = logging.getLogger("lookout.report")


class ReportError(Exception):
    """A problem with the input or output of a report; the message is one line."""


# ------------------------------------------------------------------ reading


def load_events(path: Path) -> list[dict[str, Any]]:
    """Every event of a JSON-lines file or a SQLite event log, in order."""
    try:
        with path.open("rb") as file:
            head = file.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not an events file") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror})") from None
    if head == SQLITE_MAGIC:
        return _load_sqlite(path)
    return _load_jsonl(path)


def _load_sqlite(path: Path) -> list[dict[str, Any]]:
    from live.eventlog import read_events

    try:
        events = list(read_events(path))
    except sqlite3.Error as exc:
        raise ReportError(f"{path}: not a Lookout event database ({exc})") from None
    return [_checked(e, f"{path}: event {i + 1}") for i, e in enumerate(events)]


def _load_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReportError(f"{path}: neither a JSON-lines file nor a SQLite database") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror})") from None
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == last:
                # A run killed mid-write leaves half a line: the rest is good.
                log.warning("%s:%d: skipped a torn last line (not valid JSON)", path, number)
                break
            raise ReportError(f"{path}:{number}: not valid JSON") from None
        events.append(_checked(data, f"{path}:{number}"))
    return events


def _checked(data: Any, where: str) -> dict[str, Any]:
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("type"), str)
        or not isinstance(data.get("t"), int | float)
        or isinstance(data.get("t"), bool)
    ):
        raise ReportError(f"{where}: not a Lookout event (needs a type and a time t)")
    return data


# --------------------------------------------------------------------- runs


@dataclass
class Run:
    """One run's events, on its own time axis; ``offset`` places it on the report's."""

    events: list[dict[str, Any]]
    info: dict[str, Any] | None = None  # its ``run`` event, when the log has one
    offset: float = 0.0
    _media: tuple[list[float], list[float]] | None = field(default=None, repr=False)

    @property
    def run_id(self) -> str | None:
        return None if self.info is None else str(self.info.get("run_id"))

    @property
    def axis(self) -> str:
        if self.info is None:
            return SESSION
        if self.info.get("live") is False and self._media_map()[0]:
            return MEDIA
        return WALL if isinstance(self.info.get("started_wall"), int | float) else SESSION

    def _media_map(self) -> tuple[list[float], list[float]]:
        """(session t, media t) of the events that carry both: the frames' own times."""
        if self._media is None:
            pairs = sorted(
                (float(e["t"]), float(e["t_media"]))
                for e in self.events
                if isinstance(e.get("t_media"), int | float)
            )
            self._media = ([t for t, _ in pairs], [m for _, m in pairs])
        return self._media

    def time(self, event: dict[str, Any]) -> float:
        """Seconds on this run's axis for ``event`` (before ``offset``)."""
        t = float(event["t"])
        axis = self.axis
        if axis == MEDIA:
            if isinstance(event.get("t_media"), int | float):
                return float(event["t_media"])
            return self._media_at(t)
        return t

    def _media_at(self, t: float) -> float:
        """Media time at session time ``t``, between the frames around it."""
        ts, ms = self._media_map()
        i = bisect.bisect_left(ts, t)
        if i <= 0:
            return ms[0]
        if i >= len(ts):
            return ms[-1]
        t0, t1, m0, m1 = ts[i - 1], ts[i], ms[i - 1], ms[i]
        return m0 if t1 == t0 else m0 + (m1 - m0) * (t - t0) / (t1 - t0)

    @property
    def start(self) -> float:
        return min(self.time(e) for e in self.events)

    @property
    def end(self) -> float:
        return max(self.time(e) for e in self.events)

    def describe(self, index: int) -> str:
        if self.info is None:
            return f"run {index}"
        source = self.info.get("source", "?")
        return f"run {index} ({self.run_id}, {self.info.get('started', '?')}, {source})"


def split_runs(events: list[dict[str, Any]]) -> list[Run]:
    groups: list[list[dict[str, Any]]] = []
    infos: list[dict[str, Any] | None] = []
    last: float | None = None
    for event in events:
        t = float(event["t"])
        starts = event["type"] == "run"
        if starts or last is None or t < last - NEW_RUN_BACKSTEP_S:
            if not (starts and groups and infos[-1] is None and _only_preamble(groups[-1])):
                groups.append([])
                infos.append(None)
            last = t
        if starts:
            infos[-1] = event
        groups[-1].append(event)
        last = max(last, t)
    runs = [Run(group, info) for group, info in zip(groups, infos, strict=True)]
    offset = 0.0
    for run in runs:
        run.offset = offset - run.start
        offset += run.end - run.start
    return runs


def _only_preamble(events: list[dict[str, Any]]) -> bool:
    # A source state said before the run event belongs to that run, not to one of its own.
    return all(e["type"] in {"source_state", "connection"} for e in events)


def select_run(runs: list[Run], wanted: str) -> list[Run]:
    """The run a ``--run`` value names: its id (or a prefix of it), or its number from 1."""
    matches = [r for r in runs if r.run_id is not None and r.run_id.startswith(wanted)]
    if not matches and wanted.isdigit() and 1 <= int(wanted) <= len(runs):
        matches = [runs[int(wanted) - 1]]
    if len(matches) != 1:
        known = ", ".join(r.describe(i) for i, r in enumerate(runs, 1))
        what = "matches several runs" if matches else "is not a run of this log"
        raise ReportError(f"--run {wanted} {what} (runs: {known})")
    run = matches[0]
    run.offset = -run.start
    return [run]


# ----------------------------------------------------------------- timeline


@dataclass
class Timeline:
    runs: list[Run]
    # (time, count) at each count event, and None where the count stops being known.
    steps: list[tuple[float, int | None]] = field(default_factory=list)
    texts: list[tuple[float, str]] = field(default_factory=list)
    starts: list[tuple[float, str]] = field(default_factory=list)
    stops: list[tuple[float, str, str]] = field(default_factory=list)
    boundaries: list[float] = field(default_factory=list)
    end: float = 0.0

    @property
    def axis(self) -> str:
        """The time axis all runs share (session time when they differ)."""
        kinds = {run.axis for run in self.runs}
        return kinds.pop() if len(kinds) == 1 else SESSION


def build_timeline(events: list[dict[str, Any]], runs: list[Run] | None = None) -> Timeline:
    timeline = Timeline(runs if runs is not None else split_runs(events))
    per_call_counts = any(e["type"] == "count" and "id" in e for e in events)
    for index, run in enumerate(timeline.runs):
        if index:
            timeline.boundaries.append(run.start + run.offset)
        for event in run.events:
            t = run.time(event) + run.offset
            kind = event["type"]
            if kind == "count":
                value = event.get("count")
                timeline.steps.append((t, value if isinstance(value, int) else None))
            elif kind == "source_state" and event.get("state") != "running":
                timeline.steps.append((t, None))
            elif kind == "model_text" or (
                kind == "transcript" and event.get("direction", "output") == "output"
            ):
                timeline.texts.append((t, str(event.get("text", ""))))
            elif kind == "stream_started":
                timeline.starts.append((t, str(event.get("name", ""))))
            elif kind == "stream_stopped":
                name = str(event.get("name", ""))
                timeline.stops.append((t, name, str(event.get("reason", ""))))
                if name == COUNT_TOOL and per_call_counts:
                    timeline.steps.append((t, None))
        run_end = run.end + run.offset
        if timeline.steps and timeline.steps[-1][1] is not None:
            timeline.steps.append((run_end, None))  # a count never carries into the next run
        timeline.end = run_end
    timeline.steps.sort(key=lambda step: step[0])
    return timeline


def summarize(
    events: list[dict[str, Any]], runs: list[Run] | None = None, period_s: float | None = None
) -> dict[str, Any]:
    """Summary figures; times in seconds of the runs' own axes, counts in people.

    With lines or zones in the log, also ``period_s``, ``lines`` (entries and exits),
    ``zones`` (occupancy, dwell events) and ``periods`` (both, per period; see
    ``summarize_scene``); ``period_s`` None picks one from the report's length.
    """
    timeline = build_timeline(events, runs)
    spans: list[tuple[float, int]] = []  # (duration, count) where the count is known
    changes = 0
    previous: int | None = None
    for (t, count), (t_next, _) in zip(timeline.steps, timeline.steps[1:], strict=False):
        if count is None:
            previous = None
            continue
        if previous is not None and count != previous:
            changes += 1
        previous = count
        spans.append((max(0.0, t_next - t), count))
    counts = [c for _, c in timeline.steps if c is not None]
    observed = sum((d for d, _ in spans), 0.0)
    weighted = sum((d * c for d, c in spans), 0.0)
    stop_reasons = Counter(reason for _, _, reason in timeline.stops)
    figures: dict[str, Any] = {
        "runs": len(timeline.runs),
        "events": sum(len(run.events) for run in timeline.runs),
        "axis": timeline.axis,
        "duration_s": round(sum(r.end - r.start for r in timeline.runs), 3),
        "observed_s": round(observed, 3),
        "count_reports": len(counts),
        "changes": changes,
        "max_count": max(counts) if counts else None,
        "min_count": min(counts) if counts else None,
        "final_count": counts[-1] if counts else None,
        "mean_occupancy": round(weighted / observed, 3) if observed > 0 else None,
        "time_empty_s": round(sum((d for d, c in spans if c == 0), 0.0), 3),
        "time_occupied_s": round(sum((d for d, c in spans if c > 0), 0.0), 3),
        "model_messages": len(timeline.texts),
        "streams_started": len(timeline.starts),
        "streams_stopped": len(timeline.stops),
        "stop_reasons": dict(stop_reasons),
    }
    scene = build_scene(timeline, period_s)
    if not scene.empty:  # a log without lines or zones keeps the figures it always had
        figures.update(summarize_scene(timeline, scene))
    return figures


# ---------------------------------------------------------- lines and zones

# Period lengths a report counts crossings and zone occupancy in: "nice" steps, so that
# rows read as 10:00-10:05 rather than 10:00:17-10:04:59.
PERIOD_STEPS_S = (10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
MAX_PERIODS = 24  # rows of a table (and bars of the chart) a person still reads
DAY_S = 86400.0


def period_for(span_s: float) -> float:
    """The shortest nice period that cuts ``span_s`` into at most ``MAX_PERIODS`` periods."""
    for step in PERIOD_STEPS_S:
        if span_s <= step * MAX_PERIODS:
            return float(step)
    return math.ceil(span_s / MAX_PERIODS / DAY_S) * DAY_S


@dataclass
class ZoneFigures:
    """Occupancy of one zone over a stretch of time (one period, or the whole report)."""

    observed_s: float = 0.0  # how long the zone's count was known
    weighted: float = 0.0  # people x seconds
    max: int | None = None
    dwells: int = 0

    def hold(self, people: int, seconds: float) -> None:
        self.observed_s += seconds
        self.weighted += people * seconds
        self.max = people if self.max is None else max(self.max, people)

    def add(self, other: ZoneFigures) -> None:
        self.observed_s += other.observed_s
        self.weighted += other.weighted
        if other.max is not None:
            self.max = other.max if self.max is None else max(self.max, other.max)
        self.dwells += other.dwells

    @property
    def mean(self) -> float | None:
        # A zone seen only for an instant still has a max, but no mean worth the name.
        return round(self.weighted / self.observed_s, 3) if self.observed_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "max": self.max, "dwell_events": self.dwells}


@dataclass
class Scene:
    """The lines and zones of a report, on the report's time axis, cut into periods.

    ``crossings``: (t, line, direction); ``zone_steps``: per zone, (t, people) at each
    ``zone`` event and None where its count stops being known; ``dwells``: (t, zone).
    """

    lines: list[str]
    zones: list[str]
    period_s: float
    first: float  # start of the first period (on the axis; at or before its start)
    periods: int
    crossings: list[tuple[float, str, str]] = field(default_factory=list)
    zone_steps: dict[str, list[tuple[float, int | None]]] = field(default_factory=dict)
    dwells: list[tuple[float, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing about lines or zones in the log: the report is what it always was."""
        return not self.lines and not self.zones

    def starts(self) -> list[float]:
        return [self.first + i * self.period_s for i in range(self.periods)]

    def index(self, t: float) -> int:
        # An event at the very end of the report belongs to its last period.
        return min(self.periods - 1, max(0, int((t - self.first) // self.period_s)))

    def line_periods(self) -> dict[str, list[dict[str, int]]]:
        """Per line, the entries and exits of each period."""
        table = {name: [{"in": 0, "out": 0} for _ in range(self.periods)] for name in self.lines}
        for t, line, direction in self.crossings:
            if direction in ("in", "out"):
                table[line][self.index(t)][direction] += 1
        return table

    def zone_periods(self) -> dict[str, list[ZoneFigures]]:
        """Per zone, the time-weighted occupancy, its max and the dwell events of each period."""
        table = {name: [ZoneFigures() for _ in range(self.periods)] for name in self.zones}
        for name, steps in self.zone_steps.items():
            rows = table[name]
            for (t, people), (t_next, _) in itertools.pairwise(steps):
                if people is None:
                    continue
                # A zero-length value (said, then replaced at once) still counts for the max.
                rows[self.index(t)].hold(people, 0.0)
                for i in range(self.index(t), self.index(t_next) + 1):
                    start = self.first + i * self.period_s
                    overlap = min(t_next, start + self.period_s) - max(t, start)
                    if overlap > 0:
                        rows[i].hold(people, overlap)
        for t, zone in self.dwells:
            table[zone][self.index(t)].dwells += 1
        return table


def _scene_names(runs: list[Run], kind: str) -> list[str]:
    """Lines or zones the runs were configured with, in their order (from the run events)."""
    names: list[str] = []
    for run in runs:
        config = (run.info or {}).get("config")
        configured = config.get(kind) if isinstance(config, dict) else None
        if isinstance(configured, dict):
            names.extend(str(name) for name in configured if str(name) not in names)
    return names


def _first_period(timeline: Timeline, period_s: float) -> float:
    """Where the periods start: on the local clock's round times for one camera run
    (so that rows read 10:05-10:10), else at the start of the axis."""
    if timeline.axis == WALL and len(timeline.runs) == 1 and timeline.runs[0].info is not None:
        run = timeline.runs[0]
        assert run.info is not None
        origin = float(run.info["started_wall"]) - run.offset
        local = origin + time.localtime(origin).tm_gmtoff
        return math.floor(local / period_s) * period_s - local
    return 0.0


def build_scene(timeline: Timeline, period_s: float | None = None) -> Scene:
    """Crossings, zone occupancy and dwell events of the timeline's runs, per period."""
    runs = timeline.runs
    lines, zones = _scene_names(runs, "lines"), _scene_names(runs, "zones")
    crossings: list[tuple[float, str, str]] = []
    steps: dict[str, list[tuple[float, int | None]]] = {}
    dwells: list[tuple[float, str]] = []
    for run in runs:
        for event in run.events:
            kind = event["type"]
            if kind not in ("crossing", "zone", "dwell", "source_state"):
                continue
            t = run.time(event) + run.offset
            if kind == "crossing":
                line = str(event.get("line", ""))
                if line not in lines:
                    lines.append(line)  # a line the run event does not name still counted
                crossings.append((t, line, str(event.get("direction", ""))))
            elif kind == "zone":
                zone = str(event.get("zone", ""))
                if zone not in zones:
                    zones.append(zone)
                people = event.get("people")
                valid = isinstance(people, int) and not isinstance(people, bool)
                steps.setdefault(zone, []).append((t, people if valid else None))
            elif kind == "dwell":
                zone = str(event.get("zone", ""))
                if zone not in zones:
                    zones.append(zone)
                dwells.append((t, zone))
            elif event.get("state") != "running":
                # As for the count: with the source down nobody is known to be anywhere.
                for zone_steps in steps.values():
                    zone_steps.append((t, None))
        run_end = run.end + run.offset
        for zone_steps in steps.values():
            if zone_steps and zone_steps[-1][1] is not None:
                zone_steps.append((run_end, None))  # a zone's count never carries into the next run
    for zone_steps in steps.values():
        zone_steps.sort(key=lambda step: step[0])
    span = max(timeline.end, 0.0)
    period = period_s if period_s is not None else period_for(span)
    first = _first_period(timeline, period)
    count = max(1, math.ceil((span - first) / period - 1e-9))
    return Scene(
        lines=lines,
        zones=zones,
        period_s=period,
        first=first,
        periods=count,
        crossings=crossings,
        zone_steps={zone: steps.get(zone, []) for zone in zones},
        dwells=dwells,
    )


def period_label(timeline: Timeline, start: float, end: float) -> str:
    """A period as people read it: clock times for one camera run, else seconds of the axis."""
    if timeline.axis == WALL and len(timeline.runs) == 1 and timeline.runs[0].info is not None:
        run = timeline.runs[0]
        assert run.info is not None
        origin = float(run.info["started_wall"]) - run.offset
        shown = "%H:%M" if (end - start) % 60 == 0 else "%H:%M:%S"
        return (
            f"{time.strftime(shown, time.localtime(origin + start))}–"
            f"{time.strftime(shown, time.localtime(origin + end))}"
        )
    return f"{start:.0f}–{end:.0f} s"


def summarize_scene(timeline: Timeline, scene: Scene) -> dict[str, Any]:
    """The summary keys of lines and zones: totals, and each period's figures."""
    lines = scene.line_periods()
    zones = scene.zone_periods()
    totals: dict[str, ZoneFigures] = {}
    for name, rows in zones.items():
        total = totals[name] = ZoneFigures()
        for row in rows:
            total.add(row)
    periods = []
    for i, start in enumerate(scene.starts()):
        end = start + scene.period_s
        periods.append(
            {
                "start": round(start, 3),
                "end": round(end, 3),
                "label": period_label(timeline, start, end),
                "lines": {name: dict(rows[i]) for name, rows in lines.items()},
                "zones": {name: rows[i].to_dict() for name, rows in zones.items()},
            }
        )
    return {
        "period_s": scene.period_s,
        "lines": {
            name: {
                "in": sum(row["in"] for row in rows),
                "out": sum(row["out"] for row in rows),
            }
            for name, rows in lines.items()
        },
        "zones": {
            name: {
                "mean_people": total.mean,
                "max_people": total.max,
                "observed_s": round(total.observed_s, 3),
                "dwell_events": total.dwells,
            }
            for name, total in totals.items()
        },
        "periods": periods,
    }


# ------------------------------------------------- crossings in a --db log (ask)

_LINE_EVENTS = (
    "SELECT session, type, data FROM events WHERE type IN ('run', 'crossing') ORDER BY id"
)
# A recording's end in its own media time: the newest frame time its perception logged.
# (Over the type index: a long-lived camera log is not read whole for a question.)
_MEDIA_ENDS = (
    "SELECT session, MAX(json_extract(data, '$.t_media')) FROM events "
    "WHERE type IN ('count', 'zone', 'crossing', 'dwell') GROUP BY session"
)


@dataclass
class LineRun:
    """One ``lookout run`` of a ``--db`` log that had lines: its run event and crossings."""

    info: dict[str, Any]
    lines: list[str]
    crossings: list[dict[str, Any]]
    end_media: float | None = None  # the newest media time it logged

    @property
    def live(self) -> bool:
        return self.info.get("live") is not False

    @property
    def source(self) -> str:
        return str(self.info.get("source", ""))

    def wall(self, event: dict[str, Any]) -> float | None:
        """Wall-clock time of ``event``: the run's start plus the session time since it."""
        started = self.info.get("started_wall")
        if not isinstance(started, int | float):
            return None
        return float(started) + float(event["t"]) - float(self.info.get("t", 0.0))


def read_line_runs(path: Path) -> list[LineRun]:
    """The runs of a SQLite event log that had lines (configured, or crossings logged), oldest
    first. Only ``lookout run`` runs count: an ``ask`` records a run event of its own."""
    from live.store import SQLiteStore, read_only

    def query(conn: sqlite3.Connection) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
        rows = list(conn.execute(_LINE_EVENTS))
        return rows, dict(conn.execute(_MEDIA_ENDS).fetchall())

    try:
        store = SQLiteStore.lookup(path)
        rows, ends = store.read(query) if store is not None else read_only(path, query)
    except sqlite3.Error as exc:
        raise ReportError(f"{path}: not a Lookout event database ({exc})") from None
    infos: dict[str, dict[str, Any]] = {}
    crossings: dict[str, list[dict[str, Any]]] = {}
    for session, kind, data in rows:
        event = json.loads(data)
        if kind == "run":
            infos.setdefault(session, event)
        elif isinstance(event.get("t"), int | float):
            crossings.setdefault(session, []).append(event)
    runs: list[LineRun] = []
    # Crossings of a session without a run event cannot be placed on any clock: left out
    # (logs written before run events existed have no crossings either).
    for session, info in infos.items():
        if info.get("command", "run") != "run":
            continue
        config = info.get("config")
        configured = config.get("lines") if isinstance(config, dict) else None
        names = [str(n) for n in configured] if isinstance(configured, dict) else []
        found = crossings.get(session, [])
        for event in found:
            if str(event.get("line", "")) not in names:
                names.append(str(event.get("line", "")))
        if names:
            end = ends.get(session)
            media_end = float(end) if isinstance(end, int | float) else None
            runs.append(LineRun(info, names, found, media_end))
    return runs


def tally_crossings(crossings: list[dict[str, Any]], lines: list[str]) -> dict[str, dict[str, int]]:
    """Entries and exits per line (every line of ``lines`` shown, crossed or not)."""
    table = {name: {"in": 0, "out": 0} for name in lines}
    for event in crossings:
        direction = event.get("direction")
        if direction in ("in", "out"):
            table.setdefault(str(event.get("line", "")), {"in": 0, "out": 0})[direction] += 1
    return table


__all__ = [
    "MEDIA",
    "SESSION",
    "WALL",
    "LineRun",
    "ReportError",
    "Run",
    "Scene",
    "Timeline",
    "ZoneFigures",
    "build_scene",
    "build_timeline",
    "load_events",
    "period_for",
    "period_label",
    "read_line_runs",
    "select_run",
    "split_runs",
    "summarize",
    "summarize_scene",
    "tally_crossings",
]
