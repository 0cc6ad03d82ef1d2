"""A tool's ``region`` argument: a normalised polygon, checked as the model gave it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from live.tool import ToolArgumentError


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


__all__ = ["parse_region"]
