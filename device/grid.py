"""A fixed sampling grid in media time: which frames of a stream to take at a given rate.

The frame driver (the sampling rate; for ``lookout ask``, a report's rate) and
perception (the detection rate) take frames with this one rule, so ``lookout
run``, ``lookout count`` and ``lookout ask`` look at the same frames of a
recording.

The grid is fixed (the next point is the last point plus the interval, not the
last frame taken plus the interval), so the rate does not drift with jitter or
late frames; a gap longer than the interval, or time going back (a looped
file), starts it again at the frame that shows it.
"""

from __future__ import annotations


class SampleGrid:
    def __init__(self, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("the sampling interval must be positive")
        self.interval = interval_s
        self._next: float | None = None

    @property
    def next_point(self) -> float | None:
        """The media time of the next point on the grid (None: the next frame is taken)."""
        return self._next

    def reset(self) -> None:
        """The next frame offered is taken, and the grid starts again from it."""
        self._next = None

    def take(self, t: float) -> bool:
        """Whether the frame at media time ``t`` is on the grid (the grid moves on if so)."""
        step = self.interval
        due = self._next
        if due is not None and due - 2 * step < t < due - 1e-6:
            return False
        if due is None or abs(t - due) > step:
            due = t
        self._next = due + step
        return True


__all__ = ["SampleGrid"]
