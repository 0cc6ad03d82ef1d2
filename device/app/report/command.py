"""``lookout report``: a chart and summary figures from a recorded run.

Input: the JSON-lines file of ``--events`` or the SQLite log of ``--db`` (read and
worked out in ``report_data``: runs, their time axes, the count over time, the
figures). Output: ``.png`` (the chart, figures printed beside it) or ``.html``
(one self-contained file: the chart embedded, the figures, model messages and
stream starts/stops as tables). A recording is shown in its media time, a camera
in wall-clock time.

A log with lines or zones (``lookout run --line/--zone``) adds, on the same axis and
cut into periods (``report_scene.build_scene``): entries and exits per line (bars per
period under the count, a table and totals) and each zone's occupancy (its people
over time, a table of mean/max people and dwell events per period). A log without
them is reported exactly as before.

A log with pictures (``lookout run --snapshots DIR``) adds to the HTML the latest
pictured events with a small embedded thumbnail each (``report_pictures``).

matplotlib is an optional dependency (``.venv/bin/pip install 'matplotlib>=3.8'``);
without it ``make_report`` raises ReportError saying so.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from device.app.report.cameras import (
    CameraPart,
    camera_parts,
    chart_counts,
    chart_figures,
    chart_scene,
    device_summary,
)
from device.app.report.chart import render_chart
from device.app.report.data import (
    ReportError,
    Skipped,
    build_timeline,
    load_events,
    read_log,
    select_run,
    split_runs,
    summarize,
)
from device.app.report.html import page
from device.app.report.pictures import latest_pictures, pictures_html
from device.app.report.scene import build_scene
from device.logged_cameras import camera_view, cameras_in, named

OUTPUT_SUFFIXES = (".html", ".htm", ".png")
MAX_PERIOD_ROWS = 10_000


def _to_stderr(line: str) -> None:
    print(f"lookout: warning: {line}", file=sys.stderr)


def make_report(
    input: Path,
    out: Path,
    *,
    run: str | None = None,
    period_s: float | None = None,
    snapshots: Path | None = None,
    camera: str | None = None,
    warn: Callable[[str], None] = _to_stderr,
) -> dict[str, Any]:
    """Write the report for ``input`` (JSONL or SQLite) to ``out`` (.html or .png).

    ``run``: only that run of the log (its id, a prefix of it, or its number).
    ``period_s``: the period lines and zones are counted in (None: one that cuts the
    report into at most 24, see ``report_scene.period_for``).
    ``snapshots``: the folder of the run's pictures (None: the one its run event names).
    ``camera``: only that camera of a log of several (by default each, and the device's
    totals: ``report_cameras``).
    Returns the summary figures. Raises ReportError (one line) for anything a
    user can get wrong: missing or malformed input, an unknown output type, a
    missing output directory, an unknown run or camera, matplotlib not installed.
    Lines of the log that are not whole events (torn, corrupt) are skipped and said
    in one line through ``warn`` (stderr by default, with or without -v) and on the
    HTML page.
    """
    suffix = out.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise ReportError(f"{out}: the report must be .html or .png")
    if not out.parent.is_dir():
        raise ReportError(f"{out}: directory {out.parent} does not exist")
    events, skipped = read_log(input)
    said = skipped.describe(input)
    if said is not None:
        warn(said)
    if not events:
        raise ReportError(f"{input}: no events in it")
    runs = split_runs(events)
    # Questions (lookout ask) are recorded as runs of their own kind: not runs of the device.
    questions = [r for r in runs if r.info is not None and r.info.get("command", "run") != "run"]
    if run is not None:
        asked = [r for r in questions if r.run_id is not None and r.run_id.startswith(run)]
        if asked and not run.isdigit():
            raise ReportError(
                f"--run {run} is a question (lookout ask {asked[0].run_id}), not a run: "
                "the report draws runs of lookout run"
            )
    if questions and len(questions) < len(runs):
        events = [e for r in runs if r not in questions for e in r.events]
        runs = split_runs(events)
    if run is not None:
        runs = select_run(runs, run)
    if period_s is not None and not 0 < period_s <= 366 * 86400:
        raise ReportError(f"the period must be more than 0 s and at most a year, not {period_s:g}")
    chosen = [e for r in runs for e in r.events]
    cameras = cameras_in(chosen)
    if camera is not None:
        if camera not in cameras:
            raise ReportError(
                f"--camera {camera}: no camera of that name in this log "
                f"(cameras: {', '.join(cameras) or 'none'})"
            )
        cameras = [camera]
    if len(cameras) > 1:
        parts = camera_parts(chosen, cameras, period_s, MAX_PERIOD_ROWS)
        summary = device_summary(parts, len(runs), len(chosen))
        _write(out, _cameras_report(input, summary, parts, skipped, suffix, snapshots))
        return summary
    if named(cameras):
        # One camera of a name: its share, as the camera had it (its lines and zones).
        events = camera_view(chosen, cameras[0])
        runs = split_runs(events)
    timeline = build_timeline(events, runs)
    scene = build_scene(timeline, period_s)
    if scene.periods > MAX_PERIOD_ROWS:
        # A 1 s period over a week of camera log: tables nobody reads, bars nobody sees.
        raise ReportError(
            f"a period of {period_s:g} s cuts this log into {scene.periods} periods "
            f"(at most {MAX_PERIOD_ROWS}): choose a longer one"
        )
    summary = summarize(events, runs, period_s)
    if named(cameras):
        summary["camera"] = cameras[0]
    chart = render_chart(
        timeline, summary, with_figures=suffix == ".png", scene=None if scene.empty else scene
    )
    if suffix == ".png":
        data = chart
    else:
        pictures = pictures_html(*latest_pictures(timeline, snapshots))
        named_summary = [(summary.get("camera"), summary)]
        data = page(input, summary, named_summary, timeline, chart, skipped, pictures).encode()
    _write(out, data)
    return summary


def _cameras_report(
    source: Path,
    summary: dict[str, Any],
    parts: list[CameraPart],
    skipped: Skipped,
    suffix: str,
    snapshots: Path | None,
) -> bytes:
    """The chart (``.png``) or the page of a log of several cameras."""
    png = suffix == ".png"
    chart = render_chart(
        parts[0].timeline,  # the device's own (streams, the model's words) are in each
        summary,
        with_figures=png,
        scene=chart_scene(parts),
        counts=chart_counts(parts),
        figures=chart_figures(summary) if png else None,
    )
    if png:
        return chart
    shown, total = [], 0
    for part in parts:
        pictures, found = latest_pictures(part.timeline, snapshots)
        shown += [dataclasses.replace(p, caption=f"{part.name}: {p.caption}") for p in pictures]
        total += found
    named_summaries = [(part.name, part.summary) for part in parts]
    return page(
        source,
        summary,
        named_summaries,
        parts[0].timeline,
        chart,
        skipped,
        pictures_html(shown, total),
    ).encode()


def _write(out: Path, data: bytes) -> None:
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write ({exc.strerror})") from None


__all__ = ["ReportError", "build_timeline", "load_events", "make_report", "summarize"]
