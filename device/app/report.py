"""``lookout report``: a chart and summary figures from a recorded run.

Input: the JSON-lines file of ``--events`` or the SQLite log of ``--db`` (read and
worked out in ``report_data``: runs, their time axes, the count over time, the
figures). Output: ``.png`` (the chart, figures printed beside it) or ``.html``
(one self-contained file: the chart embedded, the figures, model messages and
stream starts/stops as tables). A recording is shown in its media time, a camera
in wall-clock time.

matplotlib is an optional dependency (``pip install 'lookout[report]'``);
without it ``make_report`` raises ReportError saying so.
"""

from __future__ import annotations

import base64
import html
import io
import time
from pathlib import Path
from typing import Any

from device.app.report_data import (
    MEDIA,
    WALL,
    ReportError,
    Timeline,
    build_timeline,
    load_events,
    select_run,
    split_runs,
    summarize,
)

OUTPUT_SUFFIXES = (".html", ".htm", ".png")
AXIS_LABELS = {
    MEDIA: "media time (s of the recording)",
    WALL: "time of day",
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
    _label_time_axis(ax, timeline)
    ax.set_ylabel("people in view")
    ax.set_title("People count")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncols=5, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _label_time_axis(ax: Any, timeline: Timeline) -> None:
    axis = timeline.axis
    ax.set_xlabel(AXIS_LABELS.get(axis, "session time (s)"))
    if axis == WALL and len(timeline.runs) == 1 and timeline.runs[0].info is not None:
        from matplotlib.ticker import FuncFormatter

        run = timeline.runs[0]
        assert run.info is not None
        origin = float(run.info["started_wall"]) - run.offset

        def clock(x: float, _position: int) -> str:
            return time.strftime("%H:%M:%S", time.localtime(origin + x))

        ax.xaxis.set_major_formatter(FuncFormatter(clock))


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


def make_report(input: Path, out: Path, *, run: str | None = None) -> dict[str, Any]:
    """Write the report for ``input`` (JSONL or SQLite) to ``out`` (.html or .png).

    ``run``: only that run of the log (its id, a prefix of it, or its number).
    Returns the summary figures. Raises ReportError (one line) for anything a
    user can get wrong: missing or malformed input, an unknown output type, a
    missing output directory, an unknown run, matplotlib not installed.
    """
    suffix = out.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise ReportError(f"{out}: the report must be .html or .png")
    if not out.parent.is_dir():
        raise ReportError(f"{out}: directory {out.parent} does not exist")
    events = load_events(input)
    if not events:
        raise ReportError(f"{input}: no events in it")
    runs = split_runs(events)
    if run is not None:
        runs = select_run(runs, run)
    timeline = build_timeline(events, runs)
    summary = summarize(events, runs)
    chart = render_chart(timeline, summary, with_figures=suffix == ".png")
    data = chart if suffix == ".png" else _html(input, summary, timeline, chart).encode()
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write ({exc.strerror})") from None
    return summary


__all__ = ["ReportError", "build_timeline", "load_events", "make_report", "summarize"]
