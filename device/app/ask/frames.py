"""The frames a ``lookout ask`` question looks at: a source through the device's frame driver
and perception (``PerceivedFrames``: the newest frame, or samples over a span, as ``lookout
run`` takes them), and the sample video opened only when a question asks about now
(``LazyFrames``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio

from device.capture import FrameDriver, Sample
from device.feeds.runner import SourceRunner
from device.sources import FrameSource, SourceError
from device.vision.percept import Percept
from device.vision.perception import Perception


class SourceEnded(SourceError):
    """The source has no more frames (the end of a file)."""


class PerceivedFrames:
    """The source's frames through the device's frame driver and perception, as ``lookout
    run`` takes them: the same frames of a recording get the same counts. A file replayed
    at ``realtime`` pace behaves like a camera that started when the question was asked
    (the newest frame is the one due now); at ``fast`` pace every frame is there at once."""

    def __init__(self, driver: FrameDriver, perception: Perception, name: str) -> None:
        self.driver = driver
        self.perception = perception
        self.name = name
        self._held: Sample | None = None  # read past the end of a span: the next one's first
        self._lock = anyio.Lock()

    async def _next(self, *, force: bool) -> Sample | None:
        async with self._lock:
            sample: Sample | None = self._held
            self._held = None
            if sample is None:
                sample = await self.driver.next(force=force)
        if sample is not None and sample.percept is not None and sample.percept.error is not None:
            # A count the detector could not make is an error, never a zero.
            raise RuntimeError(
                f"the detector failed on frame {sample.frame.index}: {sample.percept.error}"
            )
        return sample

    async def newest(self) -> Percept:
        """What perception makes of the newest frame (the one due now on a replay)."""
        sample = await self._next(force=True)
        if sample is None:
            raise SourceEnded(f"{self.name} has no more frames")
        if sample.percept is None:  # held from a span, off the grid: look at it now
            percept = await self.perception.process(sample.frame, force=True)
            assert percept is not None  # forced: the frame is looked at
            return percept
        return sample.percept

    async def samples(self, duration_s: float) -> AsyncIterator[Percept]:
        """Percepts on the detection grid for ``duration_s`` of source time from the first
        one; ends early when a file ends."""
        if duration_s <= 0:
            raise ValueError("duration_s must be positive")
        start: float | None = None
        while (sample := await self._next(force=False)) is not None:
            t = sample.frame.t_media
            if start is None or t < start:
                start = t  # the first frame, or a looped file started again
            if t - start >= duration_s:
                self._held = sample
                return
            if sample.percept is not None:
                yield sample.percept


@dataclass
class Camera:
    """What looks at the scene: its source, how it is read, and what perceives it."""

    source: FrameSource
    runner: SourceRunner
    perception: Perception
    frames: PerceivedFrames


class LazyFrames:
    """The sample video's frames, opened only when a question asks about now: a question
    about the log alone never opens (nor needs) a video."""

    def __init__(self, make: Callable[[], Camera], name: str) -> None:
        self._make = make
        self.name = name
        self.camera: Camera | None = None
        self._lock = anyio.Lock()

    async def _frames(self) -> PerceivedFrames:
        async with self._lock:
            if self.camera is None:
                self.camera = await anyio.to_thread.run_sync(self._make)
        return self.camera.frames

    async def newest(self) -> Percept:
        return await (await self._frames()).newest()

    async def samples(self, duration_s: float) -> AsyncIterator[Percept]:
        async for percept in (await self._frames()).samples(duration_s):
            yield percept


__all__ = ["Camera", "LazyFrames", "PerceivedFrames", "SourceEnded"]
