"""``lookout report``'s chart and figures: the count over time, the lines' and zones' panels.

matplotlib is imported inside the drawing functions: it is an optional
dependency (the ``report`` extra, or ``pip install matplotlib``), and ``report/command.py``
says so when it is missing.
"""

from __future__ import annotations

import io
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from device.app.report.data import MEDIA, WALL, ReportError, Timeline
from device.app.report.scene import SceneTimeline

# Several counts over time: (name, steps, end) each, on one axis.
Counts = list[tuple[str, list[tuple[float, int | None]], float]]
AXIS_LABELS = {
    MEDIA: "media time (s of the recording)",
    WALL: "time of day",
}


def figure_lines(summary: dict[str, Any]) -> list[tuple[str, str]]:
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
        *_scene_figures(summary, number),
    ]


def _scene_figures(summary: dict[str, Any], number: Callable[[Any], str]) -> list[tuple[str, str]]:
    """The lines' and zones' totals, for a log that has them (nothing otherwise)."""
    rows = [
        (f"Line {name}: in / out", f"{totals['in']} / {totals['out']}")
        for name, totals in summary.get("lines", {}).items()
    ]
    for name, zone in summary.get("zones", {}).items():
        rows.append(
            (
                f"Zone {name}: mean / max people",
                f"{number(zone['mean_people'])} / {number(zone['max_people'])}",
            )
        )
        rows.append((f"Zone {name}: dwell events", number(zone["dwell_events"])))
    return rows


def period_text(seconds: float) -> str:
    """A period's length as people say it: 10 s, 5 min, 1 h, 1 day."""
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g} {unit}"
    return f"{seconds:g} s"


def _step_segments(
    steps: list[tuple[float, int | None]], end: float
) -> list[tuple[list[float], list[float]]]:
    """Each stretch of known values on its own, so gaps (stopped, between runs) stay empty."""
    xs: list[float] = []
    ys: list[float] = []
    segments: list[tuple[list[float], list[float]]] = []
    for t, count in steps:
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
        xs.append(end)
        ys.append(ys[-1])
        segments.append((xs, ys))
    return segments


def render_chart(
    timeline: Timeline,
    summary: dict[str, Any],
    *,
    with_figures: bool,
    scene: SceneTimeline | None = None,
    counts: Counts | None = None,
    figures: list[tuple[str, str]] | None = None,
) -> bytes:
    """The chart as PNG bytes (matplotlib's Agg canvas; no pyplot, no global state)."""
    figure = chart_figure(
        timeline, summary, with_figures=with_figures, scene=scene, counts=counts, figures=figures
    )
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def chart_figure(
    timeline: Timeline,
    summary: dict[str, Any],
    *,
    with_figures: bool,
    scene: SceneTimeline | None = None,
    counts: Counts | None = None,
    figures: list[tuple[str, str]] | None = None,
) -> Any:
    """The chart's matplotlib Figure, on an Agg canvas.

    With a ``scene`` that has lines or zones, a panel for each under the count's,
    sharing its time axis; without, the chart is the count's alone, as it always was.
    ``counts``: several counts over time, one line each by its name (several cameras),
    instead of the timeline's one; ``figures``: the lines beside a PNG's chart.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        # Lookout is installed from its clone, not from PyPI: name the interpreter to use.
        raise ReportError(
            f"lookout report needs matplotlib: {sys.executable} -m pip install 'matplotlib>=3.8'"
        ) from None

    panels = [] if scene is None else [kind for kind in ("lines", "zones") if getattr(scene, kind)]
    height = 3.6 + 2.2 * len(panels)  # count and panels within one screen, at 100 dpi
    figure = Figure(figsize=(12 if with_figures else 10, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    rows = 1 + len(panels)
    ratios = (3.0,) + (2.2,) * len(panels)
    extra: list[Any] = []
    if with_figures:
        grid = figure.add_gridspec(rows, 2, width_ratios=(3.2, 1), height_ratios=ratios)
        ax = figure.add_subplot(grid[0, 0])
        extra = [figure.add_subplot(grid[i + 1, 0], sharex=ax) for i in range(len(panels))]
        side = figure.add_subplot(grid[:, 1])
        side.axis("off")
        lines = figures if figures is not None else figure_lines(summary)
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
    elif panels:
        grid = figure.add_gridspec(rows, 1, height_ratios=ratios)
        ax = figure.add_subplot(grid[0, 0])
        extra = [figure.add_subplot(grid[i + 1, 0], sharex=ax) for i in range(len(panels))]
    else:
        ax = figure.add_subplot(1, 1, 1)
    series = counts if counts is not None else [("people", timeline.steps, timeline.end)]
    top = max([c for _, steps, _ in series for _, c in steps if c is not None], default=0) + 1
    for j, (label, steps, end) in enumerate(series):
        colour = COLOURS[j % len(COLOURS)]
        for i, (seg_x, seg_y) in enumerate(_step_segments(steps, end)):
            ax.step(seg_x, seg_y, where="post", color=colour, lw=2,
                    label=label if i == 0 else None)  # fmt: skip
    for i, (t, _name) in enumerate(timeline.starts):
        ax.axvline(t, color="#2ca02c", ls="--", lw=1, label="stream started" if i == 0 else None)
    for i, (t, _name, _reason) in enumerate(timeline.stops):
        ax.axvline(t, color="#d62728", ls="--", lw=1, label="stream stopped" if i == 0 else None)
    for i, t in enumerate(timeline.boundaries):
        ax.axvline(t, color="#7f7f7f", ls=":", lw=1.5, label="new run" if i == 0 else None)
    if scene is not None:
        for i, (t, _what) in enumerate(scene.edits):
            ax.axvline(
                t, color="#ff7f0e", ls="-.", lw=1.2, label="scene edited" if i == 0 else None
            )
    if timeline.texts:
        # A thin tick per message along the top: a talkative model (a hundred messages)
        # makes a band, never a row of markers over the count; the texts are listed below.
        ax.plot(
            [t for t, _ in timeline.texts],
            [top + 0.55] * len(timeline.texts),
            "|",
            color="#9467bd",
            ms=7,
            alpha=0.5,
            label=f"model message ({len(timeline.texts)})",
        )
    ax.set_ylim(-0.2, top + 0.9)
    first = min([0.0] + [t for _, steps, _ in series for t, _ in steps])
    if panels and scene is not None:
        first = min(first, scene.first)  # a camera's first period starts on a round time
    last = max([timeline.end, 1.0] + [end for _, _, end in series])
    margin = (last - first) * 0.01  # so lines at the very start or end stay visible
    ax.set_xlim(first - margin, last + margin)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _label_time_axis(ax, timeline)
    ax.set_ylabel("people in view")
    ax.set_title("People count")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=8, ncols=5, frameon=False)
    if scene is not None:
        for kind, panel in zip(panels, extra, strict=True):
            if kind == "lines":
                _draw_lines(panel, scene)
            else:
                _draw_zones(panel, scene, timeline.end)
            panel.grid(alpha=0.3)
        if extra:
            # One time axis for all panels: its ticks and label are read under the lowest.
            for upper in [ax, *extra[:-1]]:
                upper.set_xlabel("")
                upper.tick_params(labelbottom=False)
            _label_time_axis(extra[-1], timeline)
    return figure


# A panel's legend sits right of it, never over its bars and dots (inside, "upper left"
# covered the dwell dots drawn along the top, and "best" still covers some when the
# panel is full); constrained layout makes room for it.
OUTSIDE: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0}

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def _draw_lines(ax: Any, scene: SceneTimeline) -> None:
    """Entries up and exits down, one bar of each per line and period."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    table = scene.line_periods()
    width = scene.period_s * 0.8 / max(1, len(table))
    for j, (name, rows) in enumerate(table.items()):
        colour = COLOURS[j % len(COLOURS)]
        xs = [start + scene.period_s * 0.1 + width * (j + 0.5) for start in scene.starts()]
        ax.bar(xs, [r["in"] for r in rows], width, color=colour, label=f"{name}: in")
        ax.bar(xs, [-r["out"] for r in rows], width, color=colour, alpha=0.45, label=f"{name}: out")
    ax.axhline(0, color="#444", lw=0.8)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: f"{abs(y):g}"))
    ax.set_ylabel("in ↑  out ↓")
    ax.set_title(f"Line crossings per {period_text(scene.period_s)}")
    ax.legend(**OUTSIDE, fontsize=8, frameon=False)


def _draw_zones(ax: Any, scene: SceneTimeline, end: float) -> None:
    """Each zone's people over time (steps, gaps where unknown) and its dwell events."""
    from matplotlib.ticker import MaxNLocator

    top = 1
    for j, name in enumerate(scene.zones):
        colour = COLOURS[j % len(COLOURS)]
        steps = scene.zone_steps.get(name, [])
        top = max([top] + [p for _, p in steps if p is not None])
        for i, (seg_x, seg_y) in enumerate(_step_segments(steps, end)):
            ax.step(seg_x, seg_y, where="post", color=colour, lw=1.6,
                    label=name if i == 0 else None)  # fmt: skip
    for j, name in enumerate(scene.zones):
        times = [t for t, zone in scene.dwells if zone == name]
        if times:
            ax.plot(times, [top + 0.4] * len(times), "o", color=COLOURS[j % len(COLOURS)],
                    ms=5, label=f"{name}: dwell")  # fmt: skip
    ax.set_ylim(-0.2, top + 0.9)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("people in zone")
    ax.set_title("Zone occupancy")
    ax.legend(**OUTSIDE, fontsize=8, frameon=False)


def _label_time_axis(ax: Any, timeline: Timeline) -> None:
    ax.set_xlabel(AXIS_LABELS.get(timeline.axis, "session time (s)"))
    origin = timeline.wall_origin
    if origin is not None:
        from matplotlib.ticker import FixedLocator, FuncFormatter

        low, high = ax.get_xlim()
        ticks, shown = clock_ticks(origin + low, origin + high)
        ax.xaxis.set_major_locator(FixedLocator([tick - origin for tick in ticks]))

        def clock(x: float, _position: int) -> str:
            return time.strftime(shown, time.localtime(origin + x))

        ax.xaxis.set_major_formatter(FuncFormatter(clock))


# Steps between the ticks of a time-of-day axis: round times of the local clock.
CLOCK_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                 21600, 43200, 86400)  # fmt: skip
DAY_S = 86400


def clock_ticks(low: float, high: float, most: int = 8) -> tuple[list[float], str]:
    """Wall-clock times between ``low`` and ``high`` on round times of the local clock
    (10:05, 10:10...), at most ``most`` of them, and the strftime format to show them
    (with the date when the axis spans more than a day)."""
    span = max(high - low, 1e-6)
    step = next(
        (float(s) for s in CLOCK_STEPS_S if span / s <= most),
        math.ceil(span / most / DAY_S) * float(DAY_S),
    )
    shift = time.localtime(low).tm_gmtoff  # round in local time, not in UTC
    first = math.ceil((low + shift) / step) * step - shift
    ticks = [first + i * step for i in range(int((high - first) // step) + 1)]
    shown = "%H:%M:%S" if step < 60 else "%H:%M"
    if step >= DAY_S:
        shown = "%Y-%m-%d"
    elif time.strftime("%x", time.localtime(low)) != time.strftime("%x", time.localtime(high)):
        shown = "%m-%d " + shown
    return ticks, shown


__all__ = ["chart_figure", "clock_ticks", "figure_lines", "period_text", "render_chart"]
