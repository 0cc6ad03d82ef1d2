"""`lookout report`'s chart as a reader sees it: its time axis and where its legends are.

The figure is the one the report draws (``chart_figure``), drawn by matplotlib's Agg
renderer, which tells where each tick, dot, bar and legend landed.
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import pytest

from device.app.report.chart import chart_figure, clock_ticks
from device.app.report.data import build_timeline, split_runs, summarize
from device.app.report.scene import build_scene
from device.events import DwellPassed
from live.events import Event
from tests.ops.test_report_lines_zones import ROUND_HOUR, camera_run, dicts

pytest.importorskip("matplotlib")


def drawn(events: list[dict[str, Any]], *, with_figures: bool) -> tuple[Any, Any]:
    """The report's figure of ``events``, drawn, and its renderer."""
    runs = split_runs(events)
    timeline = build_timeline(events, runs)
    scene = build_scene(timeline)
    summary = summarize(events, runs)
    figure = chart_figure(
        timeline, summary, with_figures=with_figures, scene=None if scene.empty else scene
    )
    figure.canvas.draw()
    return figure, figure.canvas.get_renderer()


def tick_labels(ax: Any) -> list[str]:
    low, high = ax.get_xlim()
    return [
        label.get_text()
        for label, tick in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True)
        if low <= tick <= high and label.get_text()
    ]


def test_a_log_of_several_camera_runs_is_charted_on_the_time_of_day() -> None:
    """Two camera runs 20 minutes apart: the axis says the time of day and its ticks are
    round clock times across both runs, each run where the clock says it was."""
    later = ROUND_HOUR + 20 * 60
    events = dicts(camera_run(ROUND_HOUR, "cam00001")) + dicts(camera_run(later, "cam00002"))
    figure, _ = drawn(events, with_figures=False)
    lowest = figure.axes[-1]
    assert lowest.get_xlabel() == "time of day"
    labels = tick_labels(lowest)
    assert len(labels) >= 3 and all(re.fullmatch(r"\d\d:\d\d", text) for text in labels), labels
    start = time.strftime("%H:%M", time.localtime(ROUND_HOUR))
    assert labels[0] == start, labels
    assert time.strftime("%H:%M", time.localtime(later + 60)) in labels or any(
        time.strftime("%H:%M", time.localtime(ROUND_HOUR + m * 60)) in labels for m in (20, 21, 22)
    ), labels
    # The second run's crossing at its 5 s is at 20 min 5 s on the axis, not at 125 s.
    timeline = build_timeline(events)
    assert timeline.wall_origin == pytest.approx(ROUND_HOUR)
    scene = build_scene(timeline)
    assert sorted(t for t, line, _ in scene.crossings if line == "door")[5] == pytest.approx(1205)
    summary = summarize(events)
    assert summary["axis"] == "wall" and summary["duration_s"] == 240.0  # not the gap
    assert summary["periods"][0]["label"].startswith(start)


def test_camera_runs_that_overlap_on_the_clock_are_not_said_to_be_the_time_of_day() -> None:
    events = dicts(camera_run(ROUND_HOUR, "cam00001")) + dicts(camera_run(ROUND_HOUR + 60, "b"))
    figure, _ = drawn(events, with_figures=False)
    assert figure.axes[-1].get_xlabel() == "session time (s)"


@pytest.mark.parametrize(
    ("low", "high", "first", "shown"),
    [
        (0.0, 200.0, "00:00:30", "%H:%M:%S"),
        (0.0, 3 * 3600.0, "00:30", "%H:%M"),
        (0.0, 3 * 86400.0, "", "%m-%d %H:%M"),
        (0.0, 10 * 86400.0, "", "%Y-%m-%d"),
    ],
)
def test_clock_ticks_fall_on_round_local_times(
    low: float, high: float, first: str, shown: str
) -> None:
    midnight = time.mktime((2026, 11, 19, 0, 0, 0, 0, 0, -1)) + 1  # just after, locally
    ticks, fmt = clock_ticks(midnight + low, midnight + high)
    assert fmt == shown and 3 <= len(ticks) <= 8
    assert all(midnight + low <= t <= midnight + high for t in ticks)
    if first:
        assert time.strftime(fmt, time.localtime(ticks[0])) == first


def _points(ax: Any) -> list[Any]:
    """Where each plotted line, dot and bar of ``ax`` is on the canvas (display pixels)."""
    found: list[Any] = []
    for line in ax.lines:
        xy = np.asarray(line.get_xydata(), dtype=float)
        if len(xy) > 1:  # along each segment too, not only at its ends
            steps = np.linspace(0.0, 1.0, 25)[:, None, None]
            xy = (xy[:-1] + steps * (xy[1:] - xy[:-1])).reshape(-1, 2)
        found.extend(line.get_transform().transform(xy))
    for patch in ax.patches:
        box = patch.get_window_extent()
        if box.width > 0 and box.height > 0:
            found.extend(box.corners())
            found.append(((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))
    return found


@pytest.mark.parametrize("with_figures", [False, True])
def test_no_legend_covers_what_is_plotted(with_figures: bool) -> None:
    """Dwell dots along the top of the zones panel from its start (where a legend in the
    upper left sat), crossings in every period: every legend stays clear of them."""
    events: list[Event] = [
        *camera_run(),
        DwellPassed(t=1.0, zone="till", track=3, seconds=12.0, t_media=1.0),
        DwellPassed(t=3.0, zone="till", track=4, seconds=12.0, t_media=3.0),
    ]
    figure, renderer = drawn(dicts(events), with_figures=with_figures)
    legends = [ax.get_legend() for ax in figure.axes if ax.get_legend() is not None]
    assert len(legends) == 3  # the count, the lines, the zones
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in figure.axes:
            covered = [p for p in _points(ax) if box.contains(*p)]
            assert not covered, f"the legend {legend.get_texts()[0].get_text()!r} covers data"
