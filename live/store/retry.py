"""When a store's writer tries again, how soon, and with how many rows.

A failed commit is retried after a backoff that grows with the failures in a
row. A locked database is not a failure yet: SQLite's own busy wait cannot be
cut short, so it waits in short slices, retried at once until
``busy_timeout_s`` has passed (closing never waits long). A batch with a row
SQLite refuses is tried again one row at a time until that row is found. The
writer (``live.store.writer``) asks with its lock held.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from live.store.file import Write, is_busy
from live.util.backoff import Backoff


class WriteRetries:
    """The retry state of one store's writer: failures in a row, busy wait, isolation."""

    def __init__(self, backoff: Backoff, *, batch_size: int, busy_timeout_s: float) -> None:
        self._backoff = backoff
        self._batch_size = batch_size
        self._busy_timeout_s = busy_timeout_s
        self._busy_since: float | None = None
        self._isolate_until = 0  # seq up to which rows are tried one at a time
        self.failures = 0  # in a row: what the backoff counts

    def batch_size(self, first: Write | None) -> int:
        """How many rows to take next, ``first`` the oldest waiting: one while isolating."""
        if first is not None and first.seq <= self._isolate_until:
            return 1
        return self._batch_size

    def still_busy(self, error: BaseException, *, degraded: bool) -> bool:
        """Locked, but not yet for busy_timeout_s: not a problem yet."""
        if degraded or not is_busy(error):
            return False
        now = time.monotonic()  # real time: SQLite waits in real time
        if self._busy_since is None:
            self._busy_since = now
        return now - self._busy_since < self._busy_timeout_s

    def succeeded(self, batch: Sequence[Write]) -> None:
        if batch and batch[-1].seq >= self._isolate_until:
            self._isolate_until = 0
        self.failures = 0
        self._busy_since = None

    def failed(self) -> None:
        self.failures += 1

    def isolate(self, batch: Sequence[Write]) -> None:
        """Try the rows up to the end of ``batch`` one at a time: one of them is refused."""
        self._isolate_until = batch[-1].seq

    def wait(self) -> float:
        """Seconds to wait before the next try."""
        return self._backoff.delay(self.failures)


__all__ = ["WriteRetries"]
