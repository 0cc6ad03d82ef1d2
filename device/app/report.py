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

import base64
import html
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from device.app.report_chart import figure_lines, period_text, render_chart
from device.app.report_data import (
    ReportError,
    Skipped,
    Timeline,
    build_timeline,
    load_events,
    read_log,
    select_run,
    split_runs,
    summarize,
)
from device.app.report_pictures import latest_pictures, pictures_html
from device.app.report_scene import build_scene
from live.printable import printable

OUTPUT_SUFFIXES = (".html", ".htm", ".png")
MAX_PERIOD_ROWS = 10_000


def _cell(value: Any) -> str:
    return (
        "–"
        if value is None
        else html.escape(f"{value:.2f}" if isinstance(value, float) else str(value))
    )


def _scene_tables(summary: dict[str, Any]) -> str:
    """The per-period tables of lines and zones, with totals; nothing for a log without."""
    periods = summary.get("periods", [])
    parts: list[str] = []
    period = html.escape(period_text(float(summary.get("period_s", 0.0))))
    if summary.get("lines"):
        rows = [
            f"<tr><td>{html.escape(p['label'])}</td><td>{html.escape(name)}</td>"
            f"<td>{counts['in']}</td><td>{counts['out']}</td></tr>"
            for p in periods
            for name, counts in p["lines"].items()
        ] + [
            f"<tr><th>total</th><th>{html.escape(name)}</th><th>{totals['in']}</th>"
            f"<th>{totals['out']}</th></tr>"
            for name, totals in summary["lines"].items()
        ]
        parts.append(
            f'<h2>Lines (per {period})</h2>\n<table id="lines"><tr><th>period</th>'
            "<th>line</th><th>in</th><th>out</th></tr>\n" + "\n".join(rows) + "</table>"
        )
    if summary.get("zones"):
        rows = [
            f"<tr><td>{html.escape(p['label'])}</td><td>{html.escape(name)}</td>"
            f"<td>{_cell(z['mean'])}</td><td>{_cell(z['max'])}</td>"
            f"<td>{z['dwell_events']}</td></tr>"
            for p in periods
            for name, z in p["zones"].items()
        ] + [
            f"<tr><th>all</th><th>{html.escape(name)}</th><th>{_cell(z['mean_people'])}</th>"
            f"<th>{_cell(z['max_people'])}</th><th>{z['dwell_events']}</th></tr>"
            for name, z in summary["zones"].items()
        ]
        parts.append(
            f'<h2>Zones (per {period})</h2>\n<table id="zones"><tr><th>period</th>'
            "<th>zone</th><th>mean people</th><th>max people</th><th>dwell events</th></tr>\n"
            + "\n".join(rows)
            + "</table>"
        )
    return "".join(f"{part}\n" for part in parts)


def _html(
    source: Path,
    summary: dict[str, Any],
    timeline: Timeline,
    chart: bytes,
    skipped: Skipped,
    pictures: str = "",
) -> str:
    esc = html.escape
    damaged = (
        f" {esc(skipped.what())} of it were skipped (torn or corrupt); the figures are of the rest."
        if skipped
        else ""
    )
    figures = "\n".join(
        f"<tr><th>{esc(name)}</th><td>{esc(value)}</td></tr>"
        for name, value in figure_lines(summary)
    )
    texts = "\n".join(  # the model's text as the console shows it: no control characters
        f"<tr><td>{t:.1f}</td><td>{esc(printable(text))}</td></tr>" for t, text in timeline.texts
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
.missing {{ color: #888; font-style: italic; }}
</style></head><body>
<h1>Lookout report</h1>
<p>From <code>{esc(str(source))}</code>: {summary["events"]} events.{damaged}</p>
<img alt="people count over time" src="data:image/png;base64,{image}">
<h2>Figures</h2>
<table id="figures">{figures}</table>
{_scene_tables(summary)}{pictures}<h2>Model messages</h2>
<table id="messages"><tr><th>t (s)</th><th>text</th></tr>{texts}</table>
<h2>Streams</h2>
<table id="streams"><tr><th>t (s)</th><th></th><th>tool</th><th>reason</th></tr>
{stream_rows}</table>
</body></html>
"""


def _to_stderr(line: str) -> None:
    print(f"lookout: warning: {line}", file=sys.stderr)


def make_report(
    input: Path,
    out: Path,
    *,
    run: str | None = None,
    period_s: float | None = None,
    snapshots: Path | None = None,
    warn: Callable[[str], None] = _to_stderr,
) -> dict[str, Any]:
    """Write the report for ``input`` (JSONL or SQLite) to ``out`` (.html or .png).

    ``run``: only that run of the log (its id, a prefix of it, or its number).
    ``period_s``: the period lines and zones are counted in (None: one that cuts the
    report into at most 24, see ``report_scene.period_for``).
    ``snapshots``: the folder of the run's pictures (None: the one its run event names).
    Returns the summary figures. Raises ReportError (one line) for anything a
    user can get wrong: missing or malformed input, an unknown output type, a
    missing output directory, an unknown run, matplotlib not installed.
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
    timeline = build_timeline(events, runs)
    scene = build_scene(timeline, period_s)
    if scene.periods > MAX_PERIOD_ROWS:
        # A 1 s period over a week of camera log: tables nobody reads, bars nobody sees.
        raise ReportError(
            f"a period of {period_s:g} s cuts this log into {scene.periods} periods "
            f"(at most {MAX_PERIOD_ROWS}): choose a longer one"
        )
    summary = summarize(events, runs, period_s)
    chart = render_chart(
        timeline, summary, with_figures=suffix == ".png", scene=None if scene.empty else scene
    )
    if suffix == ".png":
        data = chart
    else:
        pictures = pictures_html(*latest_pictures(timeline, snapshots))
        data = _html(input, summary, timeline, chart, skipped, pictures).encode()
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write ({exc.strerror})") from None
    return summary


__all__ = ["ReportError", "build_timeline", "load_events", "make_report", "summarize"]
