"""The person detector as the device shares it: loaded once, one inference at a time, in turns.

Loading a model takes a while and a 2-core device only slows down running two
inferences together, so every frame of every camera goes through this one object:
one model in memory, one inference at a time. Cameras take turns (``turn``):
each waits with at most one frame (perception awaits its detection before the
next frame), so in the order asked every waiting camera is served once before
any is served twice. A frame asked for because something moved (or the first
of a count) goes before one asked for by a still camera's heartbeat, unless that
one has waited ``routine_wait_s``: a busy camera never starves a still one.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread

from models.detections import Detector

DetectorFactory = Callable[[], Detector]
ROUTINE_WAIT_S = 2.0  # a heartbeat's frame waits at most this long behind moving cameras


class SharedDetector:
    """The detector, loaded on first use in a worker thread (loading takes a while).

    An object with ``.detect()`` is the detector; anything else is a factory.
    ``limiter`` is the one worker thread inferences run in: on a 2-core device two
    at once would only slow each other.
    """

    def __init__(
        self,
        detector: Detector | DetectorFactory,
        *,
        routine_wait_s: float = ROUTINE_WAIT_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._factory = detector
        self._detector: Detector | None = detector if hasattr(detector, "detect") else None
        self._lock = threading.Lock()
        self.limiter = anyio.CapacityLimiter(1)
        self.routine_wait_s = routine_wait_s
        self._monotonic = monotonic
        self._busy = False
        self._urgent: deque[anyio.Event] = deque()
        self._routine: deque[tuple[float, anyio.Event]] = deque()
        self.turns = 0  # turns given (each one inference)

    def get(self) -> Detector:
        """The detector, loading it first if need be (call from a worker thread)."""
        detector = self._detector
        if detector is not None:
            return detector  # the per-frame case: no lock once loaded
        with self._lock:
            if self._detector is None:
                factory = self._factory
                assert callable(factory)
                self._detector = factory()
            return self._detector

    async def load(self) -> Detector:
        return await anyio.to_thread.run_sync(self.get, limiter=self.limiter)

    @property
    def waiting(self) -> int:
        """Cameras waiting for their turn now."""
        return len(self._urgent) + len(self._routine)

    @asynccontextmanager
    async def turn(self, *, urgent: bool = True) -> AsyncIterator[None]:
        """Wait for this camera's turn at the detector, and hold it for one inference."""
        await self._acquire(urgent)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, urgent: bool) -> None:
        if not self._busy and not self._urgent and not self._routine:
            self._busy = True
            self.turns += 1
            return
        event = anyio.Event()
        entry = (self._monotonic(), event)
        if urgent:
            self._urgent.append(event)
        else:
            self._routine.append(entry)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self._release()  # given the turn as it was cancelled: pass it on
            elif urgent:
                self._urgent.remove(event)
            else:
                self._routine.remove(entry)
            raise

    def _release(self) -> None:
        next_event = self._next()
        if next_event is None:
            self._busy = False
            return
        self.turns += 1
        next_event.set()  # the turn passes on: still busy

    def _next(self) -> anyio.Event | None:
        if self._routine and (
            not self._urgent or self._monotonic() - self._routine[0][0] >= self.routine_wait_s
        ):
            return self._routine.popleft()[1]
        if self._urgent:
            return self._urgent.popleft()
        return None


__all__ = ["ROUTINE_WAIT_S", "DetectorFactory", "SharedDetector"]
