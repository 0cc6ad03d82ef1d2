"""The ``visitors(minutes)`` tool of ``lookout ask``: entries and exits per line, lately.

Its one job: the tool, its argument checks and its window (see ``VisitorCounter``),
over the crossings ``tools/crossing_log.py`` reads from the ``--db`` log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import Field

from device.logged_cameras import camera_info, named, run_cameras
from device.vision.percept import MAIN_CAMERA
from live.tool import Tool, ToolUnavailable
from tools.arguments import WholeRange
from tools.crossing_log import CrossingLogError, LineRun, read_line_runs
from tools.function_tool import FunctionTool

MAX_VISITORS_MINUTES = 7 * 24 * 60  # a week: what a device's --db log is asked about


class VisitorsUnavailable(ToolUnavailable):
    """``visitors`` cannot answer from this log (none given, no line); one line, said as is."""


def _local_time(seconds: float) -> str:
    # As run events say their start: ISO, local time, with its offset.
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(seconds))


@dataclass
class VisitorCounter:
    """The ``visitors(minutes)`` tool: entries and exits per line, from the ``--db`` log.

    ``lookout ask`` does not track people itself (it looks at single frames); the
    crossings are those a ``lookout run --line ... --db`` counted into the same file,
    earlier or while it runs. The window ends:

    * for a camera (the newest run with lines is live): now, on the wall clock; every
      camera run with lines in the log counts (a service restarted mid-window);
    * for a recording (the newest run with lines is a file): at the end of that run, in
      the recording's own media time, as ``lookout report`` shows it.
    """

    db: Path | None
    configured: tuple[str, ...] = ()  # lines of this ask's own configuration (the TOML)
    wall: Callable[[], float] = time.time

    def tool(self) -> Tool:
        return FunctionTool(self.visitors)

    async def visitors(
        self,
        minutes: Annotated[
            float,
            Field(
                gt=0,
                le=MAX_VISITORS_MINUTES,
                description="how far back to count, in minutes (fractions allowed, at most "
                f"{MAX_VISITORS_MINUTES}).",
            ),
            WholeRange(),
        ],
        camera: Annotated[
            str,
            Field(
                description="the camera asked about: its name, or a line of it ('door'); "
                "empty: each camera, and in total"
            ),
        ] = "",
    ) -> dict[str, Any]:
        """Count the people who crossed each counting line (in and out) in the last minutes.

        Returns {"minutes", "lines": {name: {"in": n, "out": m}}, "from", "to", "clock"}:
        clock "wall" (from/to are local times) for a camera, "media" (seconds of the
        recording) for a recorded video. On a log of several cameras, with ``camera`` for
        one, or each camera's ("cameras": {camera: {"lines", "crossings"}}) and the total
        ("total": {"in", "out"}).
        """
        if self.db is None:
            raise VisitorsUnavailable(
                "no event log to count visitors in: ask with --db PATH, the database "
                "that lookout run --line NAME=X1,Y1,X2,Y2 --db PATH writes (or --events PATH)"
            )
        db = self.db
        try:
            runs = await anyio.to_thread.run_sync(lambda: read_line_runs(db))
        except CrossingLogError as exc:
            raise VisitorsUnavailable(str(exc)) from None
        return self.count(runs, minutes, camera)

    def count(self, runs: list[LineRun], minutes: float, camera: str = "") -> dict[str, Any]:
        """The answer for ``runs`` (``read_line_runs``) over the last ``minutes``."""
        span = minutes * 60.0
        if not runs:
            if not self.configured:
                raise VisitorsUnavailable(
                    f"no counting line is configured, and {self.db} has no run that counted "
                    "crossings: run lookout run --line NAME=X1,Y1,X2,Y2 --db with this file"
                )
            now = self.wall()
            return {
                "minutes": minutes,
                "clock": "wall",
                "from": _local_time(now - span),
                "to": _local_time(now),
                "lines": tally_crossings([], list(self.configured)),
                "crossings": 0,
                "note": "no run in this log has counted crossings yet",
            }
        newest = runs[-1]
        if newest.live:
            now = self.wall()
            start = now - span
            found = [
                event
                for run in runs
                if run.live
                for event in run.crossings
                if (wall := run.wall(event)) is not None and start <= wall <= now
            ]
            window: dict[str, Any] = {
                "clock": "wall",
                "from": _local_time(start),
                "to": _local_time(now),
            }
        else:
            times = [float(e["t_media"]) for e in newest.crossings if _has_media(e)]
            end = max([newest.end_media or 0.0, *times])
            start_media = max(0.0, end - span)
            found = [
                e for e in newest.crossings if _has_media(e) and start_media <= e["t_media"] <= end
            ]
            window = {
                "clock": "media",
                "from": round(start_media, 2),
                "to": round(end, 2),
                "source": Path(newest.source).name or newest.source,
            }
        # The lines of now (this configuration, the newest run's); a line crossed in the
        # window that has since been renamed or removed is still counted (tally adds it).
        names = list(self.configured)
        names.extend(name for name in newest.lines if name not in names)
        cameras = line_cameras(runs)
        if named(cameras):
            return {"minutes": minutes, **window, **by_camera(found, runs, cameras, camera)}
        return {
            "minutes": minutes,
            **window,
            "lines": tally_crossings(found, names),
            "crossings": len(found),
        }


def line_cameras(runs: list[LineRun]) -> list[str]:
    """The cameras of the runs with lines (a log from before cameras had names: main)."""
    names: list[str] = []
    for run in runs:
        found = run_cameras(run.info) + [str(e.get("camera", MAIN_CAMERA)) for e in run.crossings]
        names.extend(name for name in found if name not in names)
    return names


def _camera_lines(runs: list[LineRun], name: str) -> list[str]:
    lines: list[str] = []
    for run in runs:
        config = camera_info(run.info, name).get("config") or {}
        found = list(config.get("lines") or {}) + [
            str(e.get("line", "")) for e in run.crossings if e.get("camera") == name
        ]
        lines.extend(line for line in found if line not in lines)
    return lines


def by_camera(
    found: list[dict[str, Any]], runs: list[LineRun], cameras: list[str], place: str
) -> dict[str, Any]:
    """The crossings ``found`` of a log of several cameras: of the camera ``place`` names
    (or the cameras with a line of that name), or of each camera and in total; a place
    none has is refused naming the cameras."""
    lines = {name: _camera_lines(runs, name) for name in cameras}
    lines = {name: names for name, names in lines.items() if names}
    if place in cameras:
        chosen = [place]
    elif place:
        chosen = [name for name, names in lines.items() if place in names]
        if not chosen:
            raise VisitorsUnavailable(
                f"no camera {place!r} in this log, nor a line of that name "
                f"(cameras: {', '.join(cameras)})"
            )
    else:
        chosen = list(lines)
    each: dict[str, dict[str, Any]] = {}
    for name in chosen:
        mine = [e for e in found if e.get("camera") == name]
        each[name] = {"lines": tally_crossings(mine, lines.get(name, [])), "crossings": len(mine)}
    if len(each) == 1:
        return {"camera": chosen[0], **each[chosen[0]]}
    counts = [c for one in each.values() for c in one["lines"].values()]
    total = {"in": sum(c["in"] for c in counts), "out": sum(c["out"] for c in counts)}
    return {
        "cameras": each,
        "total": total,
        "crossings": sum(c["crossings"] for c in each.values()),
    }


def _has_media(event: dict[str, Any]) -> bool:
    value = event.get("t_media")
    return isinstance(value, int | float) and not isinstance(value, bool)


def tally_crossings(crossings: list[dict[str, Any]], lines: list[str]) -> dict[str, dict[str, int]]:
    """Entries and exits per line (every line of ``lines`` shown, crossed or not)."""
    table = {name: {"in": 0, "out": 0} for name in lines}
    for event in crossings:
        direction = event.get("direction")
        if direction in ("in", "out"):
            table.setdefault(str(event.get("line", "")), {"in": 0, "out": 0})[direction] += 1
    return table


__all__ = ["MAX_VISITORS_MINUTES", "VisitorCounter", "VisitorsUnavailable", "tally_crossings"]
