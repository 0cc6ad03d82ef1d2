"""``lookout report`` of a log of several cameras: each camera's part, and the device's.

Each camera is reported over its share of the log (``device/logged_cameras.py``: its
events and the device's own, of the runs it was in), on its own time axis (a recording
in its own media time), exactly as a one-camera log is (``report_data``,
``report_scene``): its count over time, its lines and zones (a name may be another
camera's too: each is the camera's own). All of them are cut into the same periods.
The device's part is the sum of what adds up: the people who came in and went out
across every camera's lines, and the dwell events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from device.app.report.chart import Counts, figure_lines
from device.app.report.data import ReportError, Run, Timeline, build_timeline, split_runs, summarize
from device.app.report.scene import SceneTimeline, build_scene, period_for
from device.logged_cameras import camera_view
from live.util.plural import counted


@dataclass
class CameraPart:
    """One camera's share of the report."""

    name: str
    runs: list[Run]
    timeline: Timeline
    scene: SceneTimeline
    summary: dict[str, Any]


def camera_parts(
    events: list[dict[str, Any]], cameras: list[str], period_s: float | None, max_rows: int
) -> list[CameraPart]:
    """Each camera's part of ``events`` (the runs to report, one after the other), all of
    them cut into ``period_s`` (None: the one that cuts the longest into at most 24)."""
    views = {name: camera_view(events, name) for name in cameras}
    views = {name: view for name, view in views.items() if view}
    runs = {name: split_runs(view) for name, view in views.items()}
    timelines = {name: build_timeline(view, runs[name]) for name, view in views.items()}
    period = period_s
    if period is None:
        period = period_for(max(max(t.end, 0.0) for t in timelines.values()))
    parts = []
    for name, view in views.items():
        scene = build_scene(timelines[name], period)
        if scene.periods > max_rows:
            raise ReportError(
                f"a period of {period:g} s cuts camera {name}'s log into {scene.periods} "
                f"periods (at most {max_rows}): choose a longer one"
            )
        summary = summarize(view, runs[name], period)
        parts.append(CameraPart(name, runs[name], timelines[name], scene, summary))
    return parts


def device_summary(parts: list[CameraPart], runs: int, events: int) -> dict[str, Any]:
    """The report's figures: each camera's (``cameras``) and the device's (``total``)."""
    cameras = {part.name: part.summary for part in parts}
    lines = [t for s in cameras.values() for t in s.get("lines", {}).values()]
    zones = [z for s in cameras.values() for z in s.get("zones", {}).values()]
    return {
        "runs": runs,
        "events": events,
        "count_reports": sum(s["count_reports"] for s in cameras.values()),
        "model_messages": max((s["model_messages"] for s in cameras.values()), default=0),
        "cameras": cameras,
        "total": {
            "in": sum(t["in"] for t in lines),
            "out": sum(t["out"] for t in lines),
            "dwell_events": sum(z["dwell_events"] for z in zones),
        },
    }


def chart_counts(parts: list[CameraPart]) -> Counts:
    """Each camera's count over time, for one chart."""
    return [(part.name, part.timeline.steps, part.timeline.end) for part in parts]


def chart_scene(parts: list[CameraPart]) -> SceneTimeline | None:
    """Every camera's lines and zones as one scene, each named for its camera
    (``door: post``), for the chart's panels; None when no camera has any."""
    scenes = [(part.name, part.scene) for part in parts if not part.scene.empty]
    if not scenes:
        return None
    period = scenes[0][1].period_s
    first = min(scene.first for _, scene in scenes)
    end = max(scene.first + scene.periods * period for _, scene in scenes)
    merged = SceneTimeline(
        lines=[f"{name}: {line}" for name, scene in scenes for line in scene.lines],
        zones=[f"{name}: {zone}" for name, scene in scenes for zone in scene.zones],
        period_s=period,
        first=first,
        periods=max(1, math.ceil((end - first) / period - 1e-9)),
    )
    for name, scene in scenes:
        merged.crossings += [(t, f"{name}: {line}", way) for t, line, way in scene.crossings]
        merged.dwells += [(t, f"{name}: {zone}") for t, zone in scene.dwells]
        for zone, steps in scene.zone_steps.items():
            merged.zone_steps[f"{name}: {zone}"] = steps
    return merged


# Figures of the device's own events: the same in every camera's share, said once.
DEVICE_FIGURES = ("Model messages", "Streams started / stopped", "Runs")


def camera_figures(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """One camera's figures, without the device's own."""
    return [(label, value) for label, value in figure_lines(summary) if label not in DEVICE_FIGURES]


def device_figures(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The device's own figures (the model's messages, the streams, the runs)."""
    first = next(iter(summary["cameras"].values()))
    rows = [(label, value) for label, value in figure_lines(first) if label in DEVICE_FIGURES]
    return [(label, str(summary["runs"]) if label == "Runs" else value) for label, value in rows]


def chart_figures(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The lines beside a PNG's chart: each camera's figures, then the device's."""
    rows: list[tuple[str, str]] = []
    for name, figures in summary["cameras"].items():
        rows += [(f"{name}: {label}", value) for label, value in camera_figures(figures)]
    rows += device_figures(summary)
    total = summary["total"]
    rows.append(("All cameras: in / out", f"{total['in']} / {total['out']}"))
    rows.append(("All cameras: dwell events", str(total["dwell_events"])))
    return rows


def one_camera_line(summary: dict[str, Any]) -> str:
    """What ``lookout report`` says of one camera's count, lines and zones."""
    if not summary["count_reports"]:
        return f"no count ({counted(summary['events'], 'event')})"
    mean = summary["mean_occupancy"]
    axis = {"media": "of media", "wall": "", "session": ""}.get(summary["axis"], "")
    said = (
        f"max {summary['max_count']} people, "
        f"mean occupancy {'-' if mean is None else f'{mean:.2f}'} over "
        f"{summary['observed_s']:.1f} s {axis}".rstrip()
        + f", {counted(summary['changes'], 'change')}"
    )
    parts = [
        f"line {name} {totals['in']} in {totals['out']} out"
        for name, totals in summary.get("lines", {}).items()
    ]
    parts += [
        f"zone {name} max {figures['max_people']}"
        + (f" ({figures['dwell_events']} dwells)" if figures.get("dwell_events") else "")
        for name, figures in summary.get("zones", {}).items()
        if figures.get("max_people") is not None
    ]
    return said + "".join(f"; {part}" for part in parts)


def report_line(summary: dict[str, Any]) -> str:
    """What ``lookout report`` says after ``wrote PATH: ``: one camera's figures, or each
    camera's and the device's totals."""
    runs = f"{counted(summary['runs'], 'run')}, " if summary["runs"] > 1 else ""
    cameras = summary.get("cameras")
    if cameras is None:
        if not summary["count_reports"]:
            # A log of questions (lookout ask) or of a source that never ran has no count.
            return f"{runs}no count in this log ({counted(summary['events'], 'event')})"
        camera = f"camera {summary['camera']}: " if "camera" in summary else ""
        return runs + camera + one_camera_line(summary)
    each = " | ".join(f"{name}: {one_camera_line(figures)}" for name, figures in cameras.items())
    total = summary["total"]
    crossed = any(figures.get("lines") for figures in cameras.values())
    said = f" | in total {total['in']} in {total['out']} out" if crossed else ""
    return f"{runs}{counted(len(cameras), 'camera')}: {each}{said}"


__all__ = [
    "CameraPart",
    "camera_figures",
    "camera_parts",
    "chart_counts",
    "chart_figures",
    "chart_scene",
    "device_figures",
    "device_summary",
    "one_camera_line",
    "report_line",
]
