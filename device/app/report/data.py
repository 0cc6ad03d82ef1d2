"""What ``lookout report`` reads and works out: events, runs, the count over time, figures.

Input: the JSON-lines file of ``--events`` or the SQLite log of ``--db``; a camera's
events of a log from before cameras had names read as the main camera's
(``device/logged_cameras.py``).

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

Lines and zones (entries and exits per line, zone occupancy, per period) are worked
out on the same axis in ``report_scene``; ``summarize`` adds its figures when the log
has any.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from device.app.report.jsonl import NotEvents, Skipped, is_event, read_jsonl, read_log_bytes
from device.app.report.scene import build_scene, summarize_scene
from device.files.input_file import InputRefused
from device.logged_cameras import with_cameras
from live.util.redact import safe_url
from live.util.walltime import wall_time

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
    """Every event of a JSON-lines file or a SQLite event log, in order.

    What a JSON-lines file holds that is not a whole event is skipped and said as a
    warning (``read_log`` hands it to the caller instead).
    """
    events, skipped = read_log(path)
    said = skipped.describe(path)
    if said is not None:
        log.warning("%s", said)
    return events


def read_log(path: Path) -> tuple[list[dict[str, Any]], Skipped]:
    """Every event of a JSON-lines file or a SQLite event log, in order, and what of a
    JSON-lines file was skipped (torn or corrupt lines, NUL bytes; see ``report_jsonl``)."""
    try:
        data = read_log_bytes(path)
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReportError(f"{path}: is a directory, not an events file") from None
    except InputRefused as exc:
        raise ReportError(f"{path}: {exc.strerror}") from None
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror})") from None
    if data is None:
        return with_cameras(_load_sqlite(path)), Skipped()
    try:
        events, skipped = read_jsonl(data, path)
    except NotEvents as exc:
        raise ReportError(str(exc)) from None
    return with_cameras(events), skipped


def _load_sqlite(path: Path) -> list[dict[str, Any]]:
    from live.store.eventlog import read_events

    try:
        events = list(read_events(path))
    except sqlite3.Error as exc:
        raise ReportError(f"{path}: not a Lookout event database ({exc})") from None
    return [_checked(e, f"{path}: event {i + 1}") for i, e in enumerate(events)]


def _checked(data: Any, where: str) -> dict[str, Any]:
    if not is_event(data):
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
            if event.get("type") == "source_state" and event.get("state") == "ended":
                # A file ends after its last frame, though the end is said as soon as it
                # is read, while that frame may still be perceived: placed by session time
                # it would cut the last counts short by however fast the replay went.
                return self._media_map()[1][-1]
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
        # A log written before sources were shown safely may hold a URL's password.
        source = safe_url(str(self.info.get("source", "?")))
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
    walls = [_wall_start(run) for run in runs]
    if len(runs) > 1 and _one_after_another(runs, walls):
        # Camera runs: each where the clock says it was, so that the axis reads as the
        # time of day (the gaps between them left empty) and not as seconds run together.
        first = float(walls[0] or 0.0) + runs[0].start
        for run, wall in zip(runs, walls, strict=True):
            run.offset = float(wall or 0.0) - first
        return runs
    offset = 0.0
    for run in runs:
        run.offset = offset - run.start
        offset += run.end - run.start
    return runs


def _wall_start(run: Run) -> float | None:
    """The wall-clock time at session time 0 of a camera run, on the clock as the run's
    logged steps of the system clock left it (``live/util/walltime.py``); None for others."""
    if run.axis != WALL or run.info is None:
        return None
    return wall_time(0.0, run.info, [e for e in run.events if e["type"] == "clock_step"])


def _one_after_another(runs: list[Run], walls: list[float | None]) -> bool:
    """Whether every run is a camera's and each starts after the one before ended."""
    spans = [(w + r.start, w + r.end) for r, w in zip(runs, walls, strict=True) if w is not None]
    return len(spans) == len(runs) and all(
        start >= end - NEW_RUN_BACKSTEP_S for (_, end), (start, _) in itertools.pairwise(spans)
    )


def _only_preamble(events: list[dict[str, Any]]) -> bool:
    # A source state said before the run event belongs to that run, not to one of its own.
    return all(e["type"] in {"source_state", "connection"} for e in events)


MIN_PREFIX = 4  # an id's prefix shorter than this is too easily a number, or many runs


def select_run(runs: list[Run], wanted: str) -> list[Run]:
    """The run a ``--run`` value names: its number from 1, its id, or a prefix of its id
    of at least ``MIN_PREFIX`` characters ("9" is the ninth run, never an id's first
    character)."""
    matches = [r for r in runs if r.run_id == wanted]
    if not matches and wanted.isdigit() and 1 <= int(wanted) <= len(runs):
        matches = [runs[int(wanted) - 1]]
    if not matches and len(wanted) >= MIN_PREFIX:
        matches = [r for r in runs if r.run_id is not None and r.run_id.startswith(wanted)]
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
        """The time axis all runs share (session time when they differ, or when camera
        runs overlap on the clock and cannot be placed at their times)."""
        kinds = {run.axis for run in self.runs}
        if kinds == {WALL} and self.wall_origin is None:
            return SESSION
        return kinds.pop() if len(kinds) == 1 else SESSION

    @property
    def wall_origin(self) -> float | None:
        """The wall-clock time at 0 on the axis when every run is a camera's placed at its
        clock time (the case whose times read as times of day), else None."""
        origins = [_wall_start(run) for run in self.runs]
        placed = [
            w - run.offset for run, w in zip(self.runs, origins, strict=True) if w is not None
        ]
        if not placed or len(placed) != len(self.runs) or max(placed) - min(placed) > 1e-3:
            return None
        return placed[0]


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


__all__ = [
    "MEDIA",
    "SESSION",
    "WALL",
    "ReportError",
    "Run",
    "Skipped",
    "Timeline",
    "build_timeline",
    "load_events",
    "read_log",
    "select_run",
    "split_runs",
    "summarize",
]
