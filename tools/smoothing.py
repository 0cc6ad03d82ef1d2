"""Count smoothing: turn flickering per-frame counts into changes worth reporting.

A detector misses a person for a frame, or sees one twice, far more often
than people really arrive or leave. The reported count is the median of the
last ``k`` raw counts, and a new value is reported only after it has held for
``min_hold_s`` seconds of *media* time (the frames' capture times), so a
replay gives the same changes whatever the pace.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class CountChange:
    count: int
    previous: int | None
    t: float


class CountSmoother:
    def __init__(self, *, k: int = 3, min_hold_s: float = 1.0, min_change: int = 1) -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        if min_hold_s < 0:
            raise ValueError("min_hold_s must not be negative")
        if min_change < 1:
            raise ValueError("min_change must be at least 1")
        self.k = k
        self.min_hold_s = min_hold_s
        self.min_change = min_change
        self._window: deque[int] = deque(maxlen=k)
        self.reported: int | None = None
        self._candidate: int | None = None
        self._candidate_since = 0.0

    @property
    def current(self) -> int | None:
        """The smoothed value right now (median of the window), reported or not."""
        if not self._window:
            return None
        return int(statistics.median_low(self._window))

    def update(self, raw: int, t: float) -> CountChange | None:
        """Feed one raw count at media time ``t``; returns a change to report, if any."""
        self._window.append(raw)
        value = self.current
        assert value is not None
        if self.reported is None:
            # The first result is always reported: the model needs a starting point.
            self.reported = value
            return CountChange(value, None, t)
        if abs(value - self.reported) < self.min_change:
            self._candidate = None
            return None
        if value != self._candidate:
            self._candidate = value
            self._candidate_since = t
        if t - self._candidate_since >= self.min_hold_s:
            previous, self.reported = self.reported, value
            self._candidate = None
            return CountChange(value, previous, t)
        return None
