"""Turns at a fixed rate, a burst of them after a quiet spell, in the order asked.

The generic cell rate algorithm: one "theoretical arrival time", moved on by
``1/rate`` for each turn taken, and no queue to keep: whoever asks is told how
long to wait for the next free turn, or (past ``max_wait_s``) that it is too far
off. The status server takes its answers (``page/pacing.py``) and its connections
(``connection_guard.serve``) in such turns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

EPSILON_S = 1e-9  # turns are sums of 1/rate: rounding must not make a turn late or early


class Pacer:
    """Turns at ``rate_per_s``, ``burst`` of them at once after a quiet spell."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError("a pacer needs a rate above 0 and a burst of at least 1")
        self.interval_s = 1.0 / rate_per_s
        self.tolerance_s = (burst - 1) * self.interval_s
        self._monotonic = monotonic
        self._tat = -math.inf  # the theoretical arrival time of the next turn

    def backlog_s(self) -> float:
        """How long a request asking now would wait for its turn."""
        now = self._monotonic()
        return max(0.0, max(self._tat, now) - now - self.tolerance_s)

    def reserve(self, max_wait_s: float = math.inf) -> float | None:
        """Take the next turn: seconds to wait for it (0: now), or None (nothing taken)
        when it is more than ``max_wait_s`` off."""
        now = self._monotonic()
        tat = max(self._tat, now)
        wait = tat - now - self.tolerance_s
        wait = 0.0 if wait < EPSILON_S else wait
        if wait > max_wait_s + EPSILON_S:
            return None
        self._tat = tat + self.interval_s
        return wait


@dataclass
class PacingStats:
    """Answers that waited for their turn, and those refused for it (429)."""

    waited: int = 0
    refused: int = 0


__all__ = ["Pacer", "PacingStats"]
