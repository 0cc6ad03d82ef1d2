"""``Backoff``: how long to wait before trying again, shared by every retry loop.

The model connection, camera reopening, the MQTT broker and job delivery all
retry with the same rule: no wait before the first try, then ``initial_s``,
doubling up to ``max_s``. The waiting itself goes through the caller's clock,
so tests run it on virtual time.
"""

from __future__ import annotations

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


__all__ = ["Backoff"]
