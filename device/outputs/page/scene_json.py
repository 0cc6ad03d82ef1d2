"""The scene as the status page reads it: tracks, lines' totals and zones, as plain JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from device.outputs.page.render import SceneGeometry
from device.vision.percept import LineTotals, Track, ZoneState


def _points(points: tuple[tuple[float, float], ...]) -> list[list[float]]:
    return [[round(x, 4), round(y, 4)] for x, y in points]


def track_json(track: Track) -> dict[str, Any]:
    """A track as the page and other clients read it (box in the frame's pixels)."""
    return {
        "id": track.id,
        "state": track.state,
        "seen": track.seen,
        "box": [round(v, 1) for v in track.box],
        "score": round(track.score, 3),
    }


def lines_json(
    lines: Mapping[str, LineTotals], geometry: SceneGeometry, *, counting: bool
) -> dict[str, dict[str, Any]]:
    """Each configured line's totals; ``counting`` is false while the count is unknown.

    The totals are what was counted so far in this run and stay on show; while
    nothing is counted they are marked as not current, never reset to 0.
    """
    data: dict[str, dict[str, Any]] = {}
    for name, totals in lines.items():
        a, b = geometry.lines.get(name, ((0.0, 0.0), (0.0, 0.0)))
        data[name] = {
            "name": name,
            "in": totals.entered,
            "out": totals.exited,
            "last": totals.last,
            "counting": counting,
            "points": _points((a, b)),
        }
    return data


def zones_json(
    zones: Mapping[str, ZoneState], geometry: SceneGeometry, *, counting: bool
) -> dict[str, dict[str, Any]]:
    """Each configured zone now; ``people``, ``dwelling``, ``longest_s`` null while unknown."""
    data: dict[str, dict[str, Any]] = {}
    for name, zone in zones.items():
        known = zone.people is not None and counting
        data[name] = {
            "name": name,
            "people": zone.people if known else None,
            "dwelling": zone.dwelling if known else None,
            "longest_s": round(zone.longest_s, 1) if known else None,
            "dwell_s": zone.dwell_s,
            "points": _points(geometry.zones.get(name, ())),
        }
    return data


__all__ = ["lines_json", "track_json", "zones_json"]
