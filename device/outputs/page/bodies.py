"""The status server's answers, made once per change of the device and shared by every reader.

The page's state (``/api/state``, each Server-Sent Event, the page itself) and
the Prometheus text (``/metrics``) cost the event loop a fraction of a
millisecond to a millisecond each to make. Made per request, readers would buy
loop time with every poll; made here, a body is made again only when the device
changed since (the telemetry's version) or when it is ``max_age_s`` old (what
moves with time alone: the session clock, how long a stream has run). So a
reader is never served a body older than the device's last change, nor older
than ``max_age_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class SharedBody:
    """``make()``'s result, made again when ``version()`` moved or it is too old."""

    def __init__(
        self,
        make: Callable[[], bytes],
        version: Callable[[], int],
        *,
        max_age_s: float = 0.25,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._make = make
        self._version = version
        self.max_age_s = max_age_s
        self._monotonic = monotonic
        self._body: bytes | None = None
        self._made_at = 0.0
        self._made_version = -1
        self.made = 0  # how many times it was made (the benchmark and tests read it)

    def get(self) -> bytes:
        now = self._monotonic()
        version = self._version()
        if (
            self._body is None
            or version != self._made_version
            or now - self._made_at >= self.max_age_s
        ):
            # The version is read before making: a change made meanwhile (there is none on
            # one loop) would make the next reader rebuild, never keep a body older than it.
            self._body = self._make()
            self._made_at = now
            self._made_version = version
            self.made += 1
        return self._body


__all__ = ["SharedBody"]
