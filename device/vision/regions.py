"""Regions of the frame, normalised to 0..1: which points and people are inside one.

Pure geometry over numpy: zones (``device/vision/zones.py``) and the tools' regions
share it, so a person is inside a region by one rule everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from device.vision.percept import Track
from models.detections import Detections


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


__all__ = ["count_in_region", "count_people_in_region", "inside"]
