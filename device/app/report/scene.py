"""The lines and zones of a report: entries and exits per line, zone occupancy, per period.

From a timeline's runs (``report_data``), on the same time axis: the ``crossing``,
``zone`` and ``dwell`` events (the names also from the run events' configuration)
are cut into periods (``period_for`` picks their length from the report's length,
on the local clock's round times for one camera run). Per period and in total:
entries and exits per line, and per zone the time-weighted mean and the max of its
people (each ``zone`` count holds like the count does, until it becomes unknown or
the run ends) and the dwell events.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Types only: report_data's summary calls this module, never the other way round.
    from device.app.report.data import Run, Timeline

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
class SceneTimeline:
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
    # When a line or zone was removed on the page (and not brought back): its rows end there.
    ended: dict[tuple[str, str], float] = field(default_factory=dict)  # (kind, name) -> t
    edits: list[tuple[float, str]] = field(default_factory=list)  # scene edits: (t, what)

    def lives(self, kind: str, name: str, start: float) -> bool:
        """Whether ``name`` (a "line" or "zone") was still there in the period from ``start``."""
        end = self.ended.get((kind, name))
        return end is None or start < end

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
    origin = timeline.wall_origin
    if origin is not None:
        local = origin + time.localtime(origin).tm_gmtoff
        return math.floor(local / period_s) * period_s - local
    return 0.0


def _edited(
    event: dict[str, Any],
    t: float,
    lines: list[str],
    zones: list[str],
    crossings: list[tuple[float, str, str]],
    steps: dict[str, list[tuple[float, int | None]]],
    dwells: list[tuple[float, str]],
    ended: dict[tuple[str, str], float],
) -> None:
    """Lines and zones edited while running (a ``scene`` event): a renamed one is one row
    under its new name (its totals carried over on the device too); a removed or moved
    zone's count ends there (nobody is known to be in it until it is counted again); a
    removed one's rows end there (``ended``)."""
    changes = event.get("changes")
    for change in changes if isinstance(changes, list) else []:
        if not isinstance(change, dict):
            continue
        kind, name, how, was = (str(change.get(k, "")) for k in ("kind", "name", "how", "was"))
        if how == "renamed" and was:
            names = lines if kind == "line" else zones
            if was in names:
                names[names.index(was)] = name
            if kind == "line":
                crossings[:] = [(ct, name if n == was else n, d) for ct, n, d in crossings]
            else:
                if was in steps:
                    steps[name] = steps.pop(was)
                dwells[:] = [(dt, name if z == was else z) for dt, z in dwells]
        elif kind == "zone" and how in ("removed", "moved"):
            old = was or name
            if old in steps and steps[old] and steps[old][-1][1] is not None:
                steps[old].append((t, None))
        if how == "removed":
            ended[(kind, was or name)] = t
        if how in ("added", "renamed"):
            ended.pop((kind, name), None)
        if how == "added" and name not in (lines if kind == "line" else zones):
            (lines if kind == "line" else zones).append(name)


def build_scene(timeline: Timeline, period_s: float | None = None) -> SceneTimeline:
    """Crossings, zone occupancy and dwell events of the timeline's runs, per period."""
    runs = timeline.runs
    lines, zones = _scene_names(runs, "lines"), _scene_names(runs, "zones")
    crossings: list[tuple[float, str, str]] = []
    steps: dict[str, list[tuple[float, int | None]]] = {}
    dwells: list[tuple[float, str]] = []
    ended: dict[tuple[str, str], float] = {}
    edits: list[tuple[float, str]] = []
    for run in runs:
        for event in run.events:
            kind = event["type"]
            if kind not in ("crossing", "zone", "dwell", "source_state", "scene"):
                continue
            t = run.time(event) + run.offset
            if kind == "scene":
                _edited(event, t, lines, zones, crossings, steps, dwells, ended)
                changes = event.get("changes") or []
                said = [str(c.get("said", "")) for c in changes if isinstance(c, dict)]
                edits.append((t, "; ".join(x for x in said if x) or "scene edited"))
            elif kind == "crossing":
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
    # A line or zone drawn and removed again without counting anything is not the scene's.
    crossed = {line for _, line, _ in crossings}
    lines = [n for n in lines if ("line", n) not in ended or n in crossed]
    dwelt = {zone for _, zone in dwells}
    zones = [
        n
        for n in zones
        if ("zone", n) not in ended or n in dwelt or any(people for _, people in steps.get(n, []))
    ]
    span = max(timeline.end, 0.0)
    period = period_s if period_s is not None else period_for(span)
    first = _first_period(timeline, period)
    count = max(1, math.ceil((span - first) / period - 1e-9))
    return SceneTimeline(
        lines=lines,
        zones=zones,
        period_s=period,
        first=first,
        periods=count,
        crossings=crossings,
        zone_steps={zone: steps.get(zone, []) for zone in zones},
        dwells=[(t, zone) for t, zone in dwells if zone in zones],
        ended=ended,
        edits=edits,
    )


def period_label(timeline: Timeline, start: float, end: float) -> str:
    """A period as people read it: clock times for one camera run, else seconds of the axis."""
    origin = timeline.wall_origin
    if origin is not None:
        shown = "%H:%M" if (end - start) % 60 == 0 else "%H:%M:%S"
        return (
            f"{time.strftime(shown, time.localtime(origin + start))}–"
            f"{time.strftime(shown, time.localtime(origin + end))}"
        )
    return f"{start:.0f}–{end:.0f} s"


def summarize_scene(timeline: Timeline, scene: SceneTimeline) -> dict[str, Any]:
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
                "lines": {
                    name: dict(rows[i])
                    for name, rows in lines.items()
                    if scene.lives("line", name, start)
                },
                "zones": {
                    name: rows[i].to_dict()
                    for name, rows in zones.items()
                    if scene.lives("zone", name, start)
                },
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


__all__ = [
    "DAY_S",
    "MAX_PERIODS",
    "PERIOD_STEPS_S",
    "SceneTimeline",
    "ZoneFigures",
    "build_scene",
    "period_for",
    "period_label",
    "summarize_scene",
]
