"""``Backoff``: how long to wait before trying again, shared by every retry loop.

The model connection, camera reopening, the MQTT broker and job delivery all
retry with the same rule: no wait before the first try, then ``initial_s``,
doubling up to ``max_s``. The waiting itself goes through the caller's clock,
so tests run it on virtual time.

``FailureRun`` is what a retry loop says of its failures: a run of them in a
row is said at its first, at the first of each kind, then at the 10th, 100th,
1000th... with the count, and its end once. Something that keeps failing for
days costs a few lines, not one per attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    initial_s: float = 0.5
    max_s: float = 30.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if not (0 <= self.initial_s <= self.max_s) or self.factor < 1:
            raise ValueError("need 0 <= initial_s <= max_s and factor >= 1")

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failures in a row (0 failures: none)."""
        if failures <= 0:
            return 0.0
        # The exponent is capped: a camera may stay away for days, and 2.0**1024 overflows.
        return float(min(self.max_s, self.initial_s * self.factor ** min(failures - 1, 64)))


class FailureRun:
    """The failures in a row of one retry loop, and which of them have been said."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.failures = 0
        self._since = 0.0
        self._said: set[str] = set()

    def fail(self) -> int:
        """One more failure; how many in a row now."""
        if self.failures == 0:
            self._since = self._now()
        self.failures += 1
        return self.failures

    def say(self, kind: str, *, force: bool = False) -> bool:
        """Whether this failure of ``kind`` is said: the first of the run and of its kind,
        the 10th, 100th..., or whenever ``force``d."""
        said = force or milestone(self.failures) or kind not in self._said
        if said:
            self._said.add(kind)
        return said

    def counted(self, reason: str) -> str:
        """``reason`` with the run's count, once there is more than one failure."""
        if self.failures < 2:
            return reason
        return f"{reason} ({self.failures} failures in a row over {self.lasting()})"

    def lasting(self) -> str:
        """How long the run has gone on, in words."""
        return span(self._now() - self._since)

    def summary(self) -> str:
        """What its end says of the run: ``after 12 failed attempts in a row over 3 min``."""
        if not self.failures:
            return ""
        return f"after {self.failures} failed attempts in a row over {self.lasting()}"

    def reset(self) -> None:
        """It worked: the next failure starts a new run."""
        self.failures = 0
        self._said.clear()


def milestone(failures: int) -> bool:
    """The failures of a run that are said whatever their kind: the 1st, 10th, 100th..."""
    if failures < 1:
        return False
    while failures % 10 == 0:
        failures //= 10
    return failures == 1


def span(seconds: float) -> str:
    """``0.4 s``, ``12 s``, ``5 min``, ``2.5 h``."""
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


__all__ = ["Backoff", "FailureRun", "milestone", "span"]
