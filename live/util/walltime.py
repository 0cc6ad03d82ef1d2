"""Wall-clock time of logged events, across steps of the system clock.

Events carry ``t``, seconds on the monotonic clock since the session started, and a
run's ``run`` event carries the wall-clock time it started: an event's wall time is
that start plus its ``t``. When the system clock steps after the start (NTP setting
the clock of a Raspberry Pi without a real-time clock, which boots days behind), that
sum keeps the old clock: a whole day of crossings would sit days in the past, and
"visitors in the last 10 minutes" would answer 0. So the device watches the offset
between the two clocks (``StepWatch``) and logs each step as a ``clock_step`` event;
whoever turns ``t`` into wall time adds the steps the run logged (``wall_time``).

All of them, also to what came before a step: the monotonic clock measured the run
truly, and a step says the wall clock was off by that much until then (a Pi that
booted three days behind was three days behind from its start, not from the moment
NTP noticed). The newest clock is taken as the true one for the whole run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Below this, a change of the offset is the clock being slewed or read a little late,
# not stepped: NTP slews small corrections instead of stepping.
STEP_THRESHOLD_S = 2.0


@dataclass
class StepWatch:
    """Tells when the wall clock stepped against the monotonic one, and by how much."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    threshold_s: float = STEP_THRESHOLD_S

    def __post_init__(self) -> None:
        self._offset = self.wall() - self.monotonic()

    def check(self) -> float | None:
        """The step since the last check (seconds, + forward), or None when there was none."""
        offset = self.wall() - self.monotonic()
        step = offset - self._offset
        if abs(step) < self.threshold_s:
            return None
        self._offset = offset
        return step


def wall_time(
    t: float, run: Mapping[str, Any], steps: Iterable[Mapping[str, Any]] = ()
) -> float | None:
    """The wall-clock time of session time ``t`` of ``run`` (its ``run`` event), on the
    clock as the run's ``clock_step`` events left it; None when the run has no start."""
    started = run.get("started_wall")
    if not isinstance(started, int | float):
        return None
    wall = float(started) + t - float(run.get("t", 0.0))
    return wall + sum(float(s["step_s"]) for s in steps if isinstance(s.get("step_s"), int | float))


__all__ = ["STEP_THRESHOLD_S", "StepWatch", "wall_time"]
