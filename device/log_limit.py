"""Repeated log lines, said once per interval with how many were held back.

A camera that fails every frame, a flood of bad connections or a full disk
would otherwise write the same warning thousands of times a second (a tester
saw 3 MB/s of "Too many open files"). The standard library has no rate limit
for logging and the libraries that add one are more than this needs, so: one
``logging.Filter`` on the handler, keyed by logger, level and message template.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Seen:
    window_start: float
    held: int = 0


class RepeatFilter(logging.Filter):
    """Lets the first record of a kind through per ``interval_s``; counts the rest.

    The next record of that kind after the interval carries the count of those
    held back (``(37 more like this in the last 60 s)``). A kind is the logger,
    the level and the message *template* (``record.msg``), so "read failed on
    frame 12" and "... frame 13" are one kind when logged as ``"... %d", n``.
    """

    def __init__(self, interval_s: float = 60.0, now: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._now = now
        self._seen: dict[tuple[str, int, str], _Seen] = {}
        self._lock = threading.Lock()  # handlers are called from worker threads too

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._now()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or now - seen.window_start >= self.interval_s:
                held = seen.held if seen is not None else 0
                self._seen[key] = _Seen(now)
                if len(self._seen) > 1000:  # a bound on memory for endless kinds
                    self._forget_oldest()
            else:
                seen.held += 1
                return False
        if held:
            # Said with the next one, so the count is never lost, only delayed.
            record.msg = f"{record.msg} ({held:,} more like this in the last " + (
                f"{self.interval_s:g} s)"
            )
        return True

    def _forget_oldest(self) -> None:
        oldest = sorted(self._seen.items(), key=lambda item: item[1].window_start)
        for key, _ in oldest[: len(oldest) // 2]:
            del self._seen[key]


__all__ = ["RepeatFilter"]
