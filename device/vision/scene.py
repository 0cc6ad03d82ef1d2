"""The scene: the configured lines and zones, updated from each frame's tracks.

Perception hands every tracked frame to ``Scene.update``; what it returns (the
lines' totals, the zones' states, and the events of that frame) goes into the
percept and onto the bus, so every output and every tool sees the same
numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from device.events import DwellPassed, LineCrossed, ZoneCount
from device.vision.lines import LineCounter
from device.vision.percept import Anchor, LineTotals, Track, ZoneState
from device.vision.zones import ZoneWatcher
from live.events import Event

Point = tuple[float, float]


@dataclass(frozen=True)
class SceneSpec:
    """Named lines (two normalised points) and zones (a polygon and a dwell time)."""

    lines: Mapping[str, tuple[Point, Point]] = field(default_factory=dict)
    zones: Mapping[str, tuple[Sequence[Point], float]] = field(default_factory=dict)
    anchor: Anchor = "feet"

    @property
    def empty(self) -> bool:
        return not self.lines and not self.zones


Kind = Literal["line", "zone"]
How = Literal["added", "removed", "renamed", "moved", "dwell"]


@dataclass(frozen=True)
class SceneEdit:
    """One change an edit made: a line or zone ``added``, ``removed``, ``renamed`` (from
    ``was``: its totals, or the visits inside, carry over), ``moved`` (new geometry: it
    starts afresh, its totals at 0), or a zone's ``dwell`` time changed."""

    kind: Kind
    name: str
    how: How
    was: str = ""

    def said(self) -> str:
        what = f"{self.kind} {self.name}"
        if self.how == "renamed":
            return f"{self.kind} {self.was} renamed to {self.name}"
        if self.how == "moved":
            fresh = "its totals start again at 0" if self.kind == "line" else "counted afresh"
            renamed = f" (was {self.was})" if self.was and self.was != self.name else ""
            return f"{what}{renamed} moved: {fresh}"
        if self.how == "dwell":
            return f"{what}: new dwell time"
        return f"{what} {self.how}"


def _same(a: Sequence[Point], b: Sequence[Point]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(p[0], q[0], abs_tol=1e-6) and math.isclose(p[1], q[1], abs_tol=1e-6)
        for p, q in zip(a, b, strict=True)
    )


def _claims(
    new: Sequence[str], old: Mapping[str, object], was: Mapping[str, str]
) -> dict[str, str]:
    """Which old item each new one continues: the one it says it ``was`` first, then the
    one of its own name, if no other new item claimed that."""
    claimed: dict[str, str] = {}
    for name in new:
        source = was.get(name)
        if source is not None and source in old and source not in claimed.values():
            claimed[name] = source
    for name in new:
        free = name in old and name not in claimed.values()
        if free and name not in claimed and name not in was:
            claimed[name] = name
    return claimed


class Scene:
    def __init__(self, spec: SceneSpec) -> None:
        self.spec = spec
        self.lines = {
            name: LineCounter(name, a, b, spec.anchor) for name, (a, b) in spec.lines.items()
        }
        self.zones = {
            name: ZoneWatcher(
                name,
                tuple((float(x), float(y)) for x, y in points),
                dwell_s,
                spec.anchor,
            )
            for name, (points, dwell_s) in spec.zones.items()
        }

    def replace(
        self,
        spec: SceneSpec,
        *,
        lines_were: Mapping[str, str] | None = None,
        zones_were: Mapping[str, str] | None = None,
    ) -> list[SceneEdit]:
        """Count on ``spec``'s lines and zones from the next frame on.

        ``lines_were``/``zones_were``: new name -> the name it had (a rename). A line or
        zone whose geometry is unchanged goes on as it was (a renamed line keeps its
        totals and who is on which side; a zone its visits); one with new geometry
        starts afresh. Returns what changed.
        """
        edits: list[SceneEdit] = []
        lines: dict[str, LineCounter] = {}
        claimed = _claims(list(spec.lines), self.lines, lines_were or {})
        for name, (a, b) in spec.lines.items():
            source = claimed.get(name)
            old = self.lines.get(source) if source is not None else None
            if old is None or source is None:
                lines[name] = LineCounter(name, a, b, spec.anchor)
                edits.append(SceneEdit("line", name, "added"))
            elif _same((old.a, old.b), (a, b)):
                old.rename(name)
                lines[name] = old
                if source != name:
                    edits.append(SceneEdit("line", name, "renamed", source))
            else:
                lines[name] = LineCounter(name, a, b, spec.anchor)
                edits.append(SceneEdit("line", name, "moved", source))
        edits += [SceneEdit("line", n, "removed") for n in self.lines if n not in claimed.values()]
        zones: dict[str, ZoneWatcher] = {}
        claimed = _claims(list(spec.zones), self.zones, zones_were or {})
        for name, (points, dwell_s) in spec.zones.items():
            polygon = tuple((float(x), float(y)) for x, y in points)
            source = claimed.get(name)
            watcher = self.zones.get(source) if source is not None else None
            if watcher is None or source is None:
                zones[name] = ZoneWatcher(name, polygon, dwell_s, spec.anchor)
                edits.append(SceneEdit("zone", name, "added"))
            elif _same(watcher.points, polygon):
                dwell_changed = not math.isclose(watcher.dwell_s, dwell_s)
                watcher.rename(name, dwell_s)
                zones[name] = watcher
                if source != name:
                    edits.append(SceneEdit("zone", name, "renamed", source))
                if dwell_changed:
                    edits.append(SceneEdit("zone", name, "dwell"))
            else:
                zones[name] = ZoneWatcher(name, polygon, dwell_s, spec.anchor)
                edits.append(SceneEdit("zone", name, "moved", source))
        edits += [SceneEdit("zone", n, "removed") for n in self.zones if n not in claimed.values()]
        self.spec, self.lines, self.zones = spec, lines, zones
        return edits

    def line_totals(self) -> dict[str, LineTotals]:
        return {name: line.totals for name, line in self.lines.items()}

    def zone_states(self) -> dict[str, ZoneState]:
        return {name: zone.state for name, zone in self.zones.items()}

    def update(
        self,
        people: tuple[Track, ...],
        tracks: tuple[Track, ...],
        shape: tuple[int, ...],
        t: float,
    ) -> list[Event]:
        """``people``: who the device counts in this frame; ``tracks``: every live track."""
        events: list[Event] = []
        for line in self.lines.values():
            for c in line.update(tracks, shape, t):
                events.append(
                    LineCrossed(
                        line=c.line,
                        direction=c.direction,
                        track=c.track,
                        t_media=round(c.t_crossed, 3),
                        total_in=c.totals.entered,
                        total_out=c.totals.exited,
                        t_counted=round(t, 3),
                    )
                )
        for zone in self.zones.values():
            change, dwells = zone.update(people, tracks, shape, t)
            for d in dwells:
                events.append(
                    DwellPassed(zone=d.zone, track=d.track, seconds=d.seconds, t_media=round(t, 3))
                )
            if change is not None:
                events.append(_zone_event(change.state, change.previous, t))
        return events

    def forget(self, t: float | None, *, keep_tracks: bool = False) -> list[Event]:
        """The source went down: zone counts unknown; line totals stay. The tracks are
        gone, unless ``keep_tracks`` (a short outage): then who was where, and each
        visit to a zone, go on when frames come back."""
        events: list[Event] = []
        for line in self.lines.values():
            if not keep_tracks:
                line.forget()
        for zone in self.zones.values():
            change = zone.forget(keep_visits=keep_tracks)
            if change is not None:
                events.append(_zone_event(change.state, change.previous, t))
        return events


def _zone_event(state: ZoneState, previous: int | None, t: float | None) -> ZoneCount:
    return ZoneCount(
        zone=state.name,
        people=state.people,
        previous=previous,
        dwelling=state.dwelling,
        longest_s=state.longest_s,
        t_media=None if t is None else round(t, 3),
    )


__all__ = ["Scene", "SceneEdit", "SceneSpec"]
