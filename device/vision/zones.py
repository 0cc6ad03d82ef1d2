"""Named zones: how many people are inside, and who has stayed longer than the dwell time.

A zone counts the people the device counts (``device/vision/presence.py``) whose
anchor point (the feet, by default) is inside the polygon: a person seen in
the frame by where they are now, a person the detector briefly missed (still
counted) by where they were last seen. So a zone follows the scene as fast as
the device's count, and never counts someone the device does not. Dwell is per
tracked person, in media time, from the first frame they were seen inside; a
short occlusion does not reset it, leaving the zone does. ``dwelling`` is
counted among the people inside now, so it never exceeds ``people``. Each
visit that passes the dwell time is reported once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from device.vision.percept import Anchor, Track, ZoneState
from device.vision.regions import inside


@dataclass(frozen=True)
class Dwell:
    zone: str
    track: int
    seconds: float
    t_media: float


@dataclass(frozen=True)
class ZoneChange:
    state: ZoneState
    previous: int | None
    t_media: float


@dataclass
class ZoneWatcher:
    """One named zone for a run (``points``: the normalised polygon)."""

    name: str
    points: tuple[tuple[float, float], ...]
    dwell_s: float
    anchor: Anchor = "feet"

    def __post_init__(self) -> None:
        self._polygon = np.asarray(self.points, np.float64)
        self._entered: dict[int, float] = {}  # track key -> media time first seen inside
        self._ids: dict[int, int] = {}
        self._told: set[int] = set()  # visits already reported as dwelling
        self.state = ZoneState(self.name, None, dwell_s=self.dwell_s)

    def rename(self, name: str, dwell_s: float) -> None:
        """Called ``name``, with this dwell time, from now on; the visits inside go on.

        Whoever was already said to dwell is not said again (a shorter dwell time says
        the others at the next frame)."""
        self.name = name
        self.dwell_s = dwell_s
        self.state = replace(self.state, name=name, dwell_s=dwell_s)

    def forget(self, *, keep_visits: bool = False) -> ZoneChange | None:
        """The count no longer holds (the source went down): unknown; the visits end,
        unless ``keep_visits`` (a short outage: they go on when frames come back)."""
        if not keep_visits:
            self._entered.clear()
            self._told.clear()
        previous = self.state.people
        self.state = ZoneState(self.name, None, dwell_s=self.dwell_s)
        if previous is None:
            return None
        return ZoneChange(self.state, previous, 0.0)

    def update(
        self,
        people: tuple[Track, ...],
        tracks: tuple[Track, ...],
        shape: tuple[int, ...],
        t: float,
    ) -> tuple[ZoneChange | None, list[Dwell]]:
        """``people``: who the device counts in this frame; ``tracks``: every live track."""
        height, width = shape[:2]
        seen = [tr for tr in people if tr.seen]
        if seen:
            points = np.asarray([tr.anchor(self.anchor) for tr in seen], np.float64)
            points /= np.array([width, height], np.float64)
            mask = inside(self._polygon, points)
        else:
            mask = np.zeros(0, bool)
        for tr, is_inside in zip(seen, mask, strict=True):
            if is_inside:
                self._entered.setdefault(tr.key, t)
                self._ids[tr.key] = tr.id
            else:
                self._leave(tr.key)  # seen outside: the visit is over
        alive = {tr.key for tr in tracks}
        for key in [k for k in self._entered if k not in alive]:
            self._leave(key)  # the track was removed
        # Inside now: counted people whose visit goes on (seen inside, or missed by the
        # detector for a moment after being seen inside).
        here = [tr.key for tr in people if tr.key in self._entered]
        dwells: list[Dwell] = []
        longest = 0.0
        dwelling = 0
        stays = []
        for key in here:
            stayed = t - self._entered[key]
            stays.append(round(stayed, 1))
            longest = max(longest, stayed)
            if stayed >= self.dwell_s:
                dwelling += 1
                if key not in self._told:
                    self._told.add(key)
                    dwells.append(Dwell(self.name, self._ids.get(key, 0), round(stayed, 1), t))
        before = self.state
        self.state = ZoneState(
            self.name,
            len(here),
            dwelling,
            round(longest, 1),
            dwell_s=self.dwell_s,
            stays=tuple(sorted(stays, reverse=True)),
        )
        if self.state.people != before.people or dwelling != before.dwelling:
            return ZoneChange(self.state, before.people, t), dwells
        return None, dwells

    def _leave(self, key: int) -> None:
        self._entered.pop(key, None)
        self._told.discard(key)
        self._ids.pop(key, None)


__all__ = ["Dwell", "ZoneChange", "ZoneWatcher"]
