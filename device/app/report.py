"""``lookout report``: a chart and summary figures from a recorded run.

Input: the JSON-lines file of ``--events`` or the SQLite log of ``--db``.
Output: ``.png`` (the chart, figures printed beside it) or ``.html`` (one
self-contained file: the chart embedded, the figures, model messages and
stream starts/stops as tables).

The count is a step function: each ``count`` event holds until the next one,
until it becomes unknown (a ``count`` event with a null count, or the source
leaving the running state), or until the run ends. (Logs written before the
device counted on its own carry per-call counts, which end when their
``count_people`` call stops.) Time-weighted figures
(mean occupancy, time with nobody / somebody) integrate over the spans where
the count is known; nothing is assumed before the first count or after a stop.
A JSON-lines file appended to by several runs (its times start again from 0)
is read as consecutive runs, laid end to end on the chart.

matplotlib is an optional dependency (``pip install 'lookout[report]'``);
without it ``make_report`` raises ReportError saying so.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"
COUNT_TOOL = "count_people"
OUTPUT_SUFFIXES = (".html", ".htm", ".png")
# Times can step back a little within one run (an event stamped by its producer);
# a larger jump back means a new run was appended to the same file.
NEW_RUN_BACKSTEP_S = 0.5

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
    torn = not text.endswith("\n")
    events: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == last:
                # A run killed mid-write leaves half a line: the rest is good.
                log.warning("%s:%d: skipped the last line, not valid JSON (torn?)", path, number)
                break
            raise ReportError(f"{path}:{number}: not valid JSON") from None
        if number == last and torn:
            try:
                events.append(_checked(data, f"{path}:{number}"))
            except ReportError:
                log.warning("%s:%d: skipped a torn last line (not an event)", path, number)
            continue
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


# ------------------------------------------------------------------ figures


@dataclass
class Run:
    """One session's events; ``offset`` places it on the report's time axis."""

    events: list[dict[str, Any]]
    offset: float = 0.0

    @property
    def start(self) -> float:
        return min(float(e["t"]) for e in self.events)

    @property
    def end(self) -> float:
        return max(float(e["t"]) for e in self.events)


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


def split_runs(events: list[dict[str, Any]]) -> list[Run]:
    runs: list[list[dict[str, Any]]] = []
    last: float | None = None
    for event in events:
        t = float(event["t"])
        if last is None or t < last - NEW_RUN_BACKSTEP_S:
            runs.append([])
            last = t
        runs[-1].append(event)
        last = max(last, t)
    placed: list[Run] = []
    offset = 0.0
    for run_events in runs:
        run = Run(run_events)
        run.offset = offset - run.start
        offset += run.end - run.start
        placed.append(run)
    return placed


def build_timeline(events: list[dict[str, Any]]) -> Timeline:
    timeline = Timeline(split_runs(events))
    per_call_counts = any(e["type"] == "count" and "id" in e for e in events)
    for index, run in enumerate(timeline.runs):
        if index:
            timeline.boundaries.append(run.start + run.offset)
        for event in run.events:
            t = float(event["t"]) + run.offset
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
    return timeline


def summarize(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Summary figures; times in seconds, counts in people."""
    timeline = build_timeline(events)
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
    return {
        "runs": len(timeline.runs),
        "events": len(events),
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


# ------------------------------------------------------------------ drawing


def _figures_lines(summary: dict[str, Any]) -> list[tuple[str, str]]:
    def number(value: Any, unit: str = "") -> str:
        if value is None:
            return "–"
        text = f"{value:.2f}" if isinstance(value, float) else str(value)
        return f"{text}{unit}"

    return [
        ("Duration", number(summary["duration_s"], " s")),
        ("Count known for", number(summary["observed_s"], " s")),
        ("Max people", number(summary["max_count"])),
        ("Mean occupancy (time-weighted)", number(summary["mean_occupancy"])),
        ("Count changes", number(summary["changes"])),
        ("Time with nobody", number(summary["time_empty_s"], " s")),
        ("Time with somebody", number(summary["time_occupied_s"], " s")),
        ("Model messages", number(summary["model_messages"])),
        (
            "Streams started / stopped",
            f"{summary['streams_started']} / {summary['streams_stopped']}",
        ),
        ("Runs", number(summary["runs"])),
    ]


def render_chart(timeline: Timeline, summary: dict[str, Any], *, with_figures: bool) -> bytes:
    """The chart as PNG bytes (matplotlib's Agg canvas; no pyplot, no global state)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ReportError(
            "lookout report needs matplotlib: pip install 'lookout[report]'"
        ) from None

    figure = Figure(figsize=(12 if with_figures else 10, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    if with_figures:
        grid = figure.add_gridspec(1, 2, width_ratios=(3.2, 1))
        ax = figure.add_subplot(grid[0, 0])
        side = figure.add_subplot(grid[0, 1])
        side.axis("off")
        lines = _figures_lines(summary)
        side.text(
            0.0,
            1.0,
            "\n".join(f"{name}: {value}" for name, value in lines),
            va="top",
            ha="left",
            fontsize=9,
            family="monospace",
            transform=side.transAxes,
        )
    else:
        ax = figure.add_subplot(1, 1, 1)
    top = max([c for _, c in timeline.steps if c is not None], default=0) + 1
    # Draw each stretch of known count on its own, so gaps (stopped, between runs) stay empty.
    xs: list[float] = []
    ys: list[float] = []
    segments: list[tuple[list[float], list[float]]] = []
    for t, count in timeline.steps:
        if count is None:
            if xs:
                xs.append(t)
                ys.append(ys[-1])
                segments.append((xs, ys))
            xs, ys = [], []
            continue
        xs.append(t)
        ys.append(count)
    if xs:
        xs.append(timeline.end)
        ys.append(ys[-1])
        segments.append((xs, ys))
    for i, (seg_x, seg_y) in enumerate(segments):
        ax.step(
            seg_x, seg_y, where="post", color="#1f77b4", lw=2, label="people" if i == 0 else None
        )
    for i, (t, _name) in enumerate(timeline.starts):
        ax.axvline(t, color="#2ca02c", ls="--", lw=1, label="stream started" if i == 0 else None)
    for i, (t, _name, _reason) in enumerate(timeline.stops):
        ax.axvline(t, color="#d62728", ls="--", lw=1, label="stream stopped" if i == 0 else None)
    for i, t in enumerate(timeline.boundaries):
        ax.axvline(t, color="#7f7f7f", ls=":", lw=1.5, label="new run" if i == 0 else None)
    if timeline.texts:
        ax.plot(
            [t for t, _ in timeline.texts],
            [top + 0.4] * len(timeline.texts),
            "v",
            color="#9467bd",
            ms=6,
            label="model message",
        )
    ax.set_ylim(-0.2, top + 0.9)
    first = min([0.0] + [t for t, _ in timeline.steps])
    last = max(timeline.end, 1.0)
    margin = (last - first) * 0.01  # so lines at the very start or end stay visible
    ax.set_xlim(first - margin, last + margin)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("session time (s)")
    ax.set_ylabel("people in view")
    ax.set_title("People count")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncols=5, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _html(source: Path, summary: dict[str, Any], timeline: Timeline, chart: bytes) -> str:
    esc = html.escape
    figures = "\n".join(
        f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>"
        for name, value in _figures_lines(summary)
    )
    texts = "\n".join(
        f"<tr><td>{t:.1f}</td><td>{esc(text)}</td></tr>" for t, text in timeline.texts
    )
    streams = sorted(
        [(t, "started", name, "") for t, name in timeline.starts]
        + [(t, "stopped", name, reason) for t, name, reason in timeline.stops]
    )
    stream_rows = "\n".join(
        f"<tr><td>{t:.1f}</td><td>{esc(what)}</td><td>{esc(name)}</td><td>{esc(reason)}</td></tr>"
        for t, what, name, reason in streams
    )
    image = base64.b64encode(chart).decode()
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lookout report: {esc(source.name)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 1100px; }}
table {{ border-collapse: collapse; margin-bottom: 1.5rem; }}
th, td {{ text-align: left; padding: 0.25rem 0.8rem; border-bottom: 1px solid #ddd; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>Lookout report</h1>
<p>From <code>{esc(str(source))}</code>: {summary["events"]} events.</p>
<img alt="people count over time" src="data:image/png;base64,{image}">
<h2>Figures</h2>
<table id="figures">{figures}</table>
<h2>Model messages</h2>
<table id="messages"><tr><th>t (s)</th><th>text</th></tr>{texts}</table>
<h2>Streams</h2>
<table id="streams"><tr><th>t (s)</th><th></th><th>tool</th><th>reason</th></tr>
{stream_rows}</table>
</body></html>
"""


def make_report(input: Path, out: Path) -> dict[str, Any]:
    """Write the report for ``input`` (JSONL or SQLite) to ``out`` (.html or .png).

    Returns the summary figures. Raises ReportError (one line) for anything a
    user can get wrong: missing or malformed input, an unknown output type, a
    missing output directory, matplotlib not installed.
    """
    suffix = out.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise ReportError(f"{out}: the report must be .html or .png")
    if not out.parent.is_dir():
        raise ReportError(f"{out}: directory {out.parent} does not exist")
    events = load_events(input)
    if not events:
        raise ReportError(f"{input}: no events in it")
    timeline = build_timeline(events)
    summary = summarize(events)
    chart = render_chart(timeline, summary, with_figures=suffix == ".png")
    data = chart if suffix == ".png" else _html(input, summary, timeline, chart).encode()
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write ({exc.strerror})") from None
    return summary


__all__ = ["ReportError", "build_timeline", "load_events", "make_report", "summarize"]
