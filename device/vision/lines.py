"""Counting people who cross a named line, by direction, once per passage.

A line is a directed segment A -> B in normalised frame coordinates. A
tracked person's anchor point P (their feet, by default) is on the positive
side when the 2-D cross product (B - A) x (P - A) is positive, in image
coordinates (x right, y down). A crossing is ``in`` when P goes from the
negative to the positive side, ``out`` the other way; it counts only where the
path from the last point on one side to the first point on the other meets
the segment itself (walking round its end is not a crossing).

Hysteresis: a side is only taken when P is further than ``margin`` (15 % of
the person's box height, at least 3 px) from the line, so a person who stands
on it and shuffles is counted once when they finally leave it on the other
side, not at every wobble. Positions come from matched boxes only, never
from the tracker's predictions while someone is hidden: a person who walks
behind the post and comes out on the far side is counted when they are seen
there.

A crossing is counted when it is sure (the far side reached, the track confirmed: a few
frames after the path met the line), and dated when it happened: the time the path from
the last point on the near side to the first on the far side met the line, interpolated
between the two (``Crossing.t_crossed``; ``t_media`` is when it was counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from device.vision.percept import Anchor, LineTotals, Track

Direction = Literal["in", "out"]
MARGIN_OF_HEIGHT = 0.15  # three times a detector box's typical jitter (5 % of its height)
MIN_MARGIN_PX = 3.0


@dataclass(frozen=True)
class Crossing:
    line: str
    direction: Direction
    track: int
    t_media: float  # when it was counted (the frame that made it sure)
    totals: LineTotals
    t_crossed: float  # when the path met the line


@dataclass
class _Side:
    side: int  # -1 or +1
    point: tuple[float, float]
    t: float  # when the track was at ``point``
    distance: float  # its signed distance from the line there
    # Crossed while still tentative: each direction with when the path met the line.
    pending: list[tuple[Direction, float]] = field(default_factory=list)


@dataclass
class LineCounter:
    """One named line's totals for a run (``a``, ``b``: normalised points)."""

    name: str
    a: tuple[float, float]
    b: tuple[float, float]
    anchor: Anchor = "feet"

    def __post_init__(self) -> None:
        self.totals = LineTotals(self.name)
        self._sides: dict[int, _Side] = {}

    def rename(self, name: str) -> None:
        """Called ``name`` from now on; its totals and who is on which side go on."""
        self.name = name
        self.totals = replace(self.totals, name=name)

    def forget(self) -> None:
        """The tracks are gone (the source went down); totals stay for the run."""
        self._sides.clear()

    def update(self, tracks: tuple[Track, ...], shape: tuple[int, ...], t: float) -> list[Crossing]:
        height, width = shape[:2]
        ax, ay = self.a[0] * width, self.a[1] * height
        bx, by = self.b[0] * width, self.b[1] * height
        length = max(((bx - ax) ** 2 + (by - ay) ** 2) ** 0.5, 1e-9)
        crossings: list[Crossing] = []
        alive = set()
        for track in tracks:
            alive.add(track.key)
            if not track.seen:
                continue
            px, py = track.anchor(self.anchor)
            distance = ((bx - ax) * (py - ay) - (by - ay) * (px - ax)) / length
            box_height = track.box[3] - track.box[1]
            margin = max(MIN_MARGIN_PX, MARGIN_OF_HEIGHT * box_height)
            state = self._sides.get(track.key)
            if abs(distance) < margin:
                pass  # on the line: no side yet, or the same as before
            elif state is None:
                side = 1 if distance > 0 else -1
                self._sides[track.key] = state = _Side(side, (px, py), t, distance)
            else:
                side = 1 if distance > 0 else -1
                if side != state.side:
                    if _meets_segment(state.point, (px, py), (ax, ay), (bx, by)):
                        crossed = _when(state.t, state.distance, t, distance)
                        state.pending.append(("in" if side > 0 else "out", crossed))
                    state.side = side
                state.point, state.t, state.distance = (px, py), t, distance
            if state is not None and state.pending and track.confirmed:
                for direction, crossed in state.pending:
                    crossings.append(self._count(direction, track.id, t, crossed))
                state.pending.clear()
        for key in [k for k in self._sides if k not in alive]:
            del self._sides[key]  # removed tracks: a tentative one's crossing was no person
        return crossings

    def _count(self, direction: Direction, track: int, t: float, crossed: float) -> Crossing:
        totals = self.totals
        if direction == "in":
            totals = LineTotals(self.name, totals.entered + 1, totals.exited, "in")
        else:
            totals = LineTotals(self.name, totals.entered, totals.exited + 1, "out")
        self.totals = totals
        return Crossing(self.name, direction, track, t, totals, crossed)


def _when(t0: float, d0: float, t1: float, d1: float) -> float:
    """When a path at signed distance ``d0`` at ``t0`` and ``d1`` (the other side) at
    ``t1`` met the line, moving evenly between the two."""
    if d0 == d1:
        return t1
    return t0 + (t1 - t0) * d0 / (d0 - d1)


def _meets_segment(
    p: tuple[float, float], q: tuple[float, float], a: tuple[float, float], b: tuple[float, float]
) -> bool:
    """Whether the path p -> q (known to change sides of the line AB) passes within A..B."""
    # Where p->q meets the infinite line, as a fraction u along A->B.
    rx, ry = q[0] - p[0], q[1] - p[1]
    sx, sy = b[0] - a[0], b[1] - a[1]
    denominator = rx * sy - ry * sx
    if abs(denominator) < 1e-12:
        return False
    u = ((a[0] - p[0]) * ry - (a[1] - p[1]) * rx) / denominator
    return 0.0 <= u <= 1.0


__all__ = ["Crossing", "Direction", "LineCounter"]
