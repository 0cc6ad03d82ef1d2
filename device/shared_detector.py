"""The person detector as perception shares it: loaded once, one inference at a time.

Loading a model takes a while and a 2-core device only slows down running two
inferences together, so every frame of a run goes through this one object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio
import anyio.to_thread

from models.detections import Detector

DetectorFactory = Callable[[], Detector]


class SharedDetector:
    """The detector, loaded on first use in a worker thread (loading takes a while).

    An object with ``.detect()`` is the detector; anything else is a factory.
    ``limiter`` allows one inference at a time: on a 2-core device two would
    only slow each other.
    """

    def __init__(self, detector: Detector | DetectorFactory) -> None:
        self._factory = detector
        self._detector: Detector | None = detector if hasattr(detector, "detect") else None
        self._lock = threading.Lock()
        self.limiter = anyio.CapacityLimiter(1)

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


__all__ = ["DetectorFactory", "SharedDetector"]
