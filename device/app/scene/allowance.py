"""How much scene edits may write into the event logs: bytes over a sliding hour.

Each edit is a ``scene`` event holding the whole scene (a reader of a log needs nothing
before it), in the JSONL and the SQLite log both: up to ~50 KB for a maximal scene. An
operator saves a few edits a minute; a token holder looping on ``PUT /api/scene`` would
grow the logs by gigabytes a day. Counting bytes rather than edits leaves small scenes
all but unbounded while bounding what any client can add.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

PER_HOUR_BYTES = 2 * 1024 * 1024
HOUR_S = 3600.0


class Allowance:
    """Sizes spent in the last hour; ``wait_s`` says when one more fits."""

    def __init__(
        self, per_hour: int = PER_HOUR_BYTES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_hour = per_hour
        self._clock = clock
        self._spent: deque[tuple[float, int]] = deque()
        self._total = 0

    def _expire(self, now: float) -> None:
        while self._spent and self._spent[0][0] <= now - HOUR_S:
            self._total -= self._spent.popleft()[1]

    def wait_s(self, size: int) -> float:
        """Seconds until ``size`` more bytes fit in the hour (0: now)."""
        now = self._clock()
        self._expire(now)
        over = self._total + size - self.per_hour
        for when, spent in self._spent:
            if over <= 0:
                break
            over -= spent
            if over <= 0:
                return max(0.0, when + HOUR_S - now)
        return 0.0 if over <= 0 else math.inf

    def spend(self, size: int) -> None:
        now = self._clock()
        self._expire(now)
        self._spent.append((now, size))
        self._total += size


__all__ = ["HOUR_S", "PER_HOUR_BYTES", "Allowance"]
