"""Regions of the frame, normalised to 0..1: parsing them and counting the people inside."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from live.tool import ToolArgumentError
from models.detections import Detections
from tools.percept import Track


def parse_region(region: Sequence[Sequence[float]] | None, *, tool: str) -> np.ndarray | None:
    """A normalised polygon (at least 3 points with 0 <= x, y <= 1) as an (N, 2) array."""
    if region is None:
        return None
    if len(region) < 3:
        raise ToolArgumentError(f"{tool}: region needs at least 3 points [[x, y], ...]")
    points = []
    for i, point in enumerate(region):
        if len(point) != 2:
            raise ToolArgumentError(f"{tool}: region[{i}] must be [x, y]")
        x, y = float(point[0]), float(point[1])
        if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
            raise ToolArgumentError(
                f"{tool}: region[{i}] = [{x:g}, {y:g}] is outside 0..1 (normalised)"
            )
        points.append((x, y))
    return np.asarray(points, dtype=np.float64)


def inside(polygon: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Ray-casting point-in-polygon for many points at once."""
    x, y = points[:, 0:1], points[:, 1:2]
    x1, y1 = polygon[:, 0], polygon[:, 1]
    x2, y2 = np.roll(x1, -1), np.roll(y1, -1)
    crosses = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        x_at = (x2 - x1) * (y - y1) / (y2 - y1) + x1
    result: np.ndarray = np.logical_and(crosses, x < x_at).sum(axis=1) % 2 == 1
    return result


def count_in_region(
    detections: Detections, shape: tuple[int, ...], region: np.ndarray | None
) -> int:
    """People whose feet (the bottom centre of the box) are inside ``region``."""
    if region is None or len(detections) == 0:
        return len(detections)
    height, width = shape[:2]
    feet = detections.feet() / np.array([width, height], dtype=np.float32)
    return int(inside(region, feet).sum())


def count_people_in_region(
    people: Sequence[Track], shape: tuple[int, ...], region: np.ndarray | None
) -> int:
    """Tracked people whose feet are inside ``region`` (all of them without one)."""
    if region is None or not people:
        return len(people)
    height, width = shape[:2]
    feet = np.asarray([p.anchor("feet") for p in people], np.float64)
    return int(inside(region, feet / np.array([width, height], np.float64)).sum())


__all__ = ["count_in_region", "count_people_in_region", "inside", "parse_region"]
