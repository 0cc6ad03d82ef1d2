"""The scene: the configured lines and zones, updated from each frame's tracks.

Perception hands every tracked frame to ``Scene.update``; what it returns (the
lines' totals, the zones' states, and the events of that frame) goes into the
percept and onto the bus, so every output and every tool sees the same
numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from device.events import DwellPassed, LineCrossed, ZoneCount
from device.lines import LineCounter
from device.percept import Anchor, LineTotals, Track, ZoneState
from device.zones import ZoneWatcher
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
                        t_media=round(t, 3),
                        total_in=c.totals.entered,
                        total_out=c.totals.exited,
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


__all__ = ["Scene", "SceneSpec"]
