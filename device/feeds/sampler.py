"""Frames for request-response tools: the newest one now, or samples over a span.

Live mode pushes every frame through the capture loop; a one-shot question
instead pulls: ``newest()`` for "how many people now", ``samples()`` for a
report over minutes. A file replayed at ``realtime`` pace behaves like a
camera that started when the sampler did (the newest frame is the one due
now); at ``fast`` pace every frame is available at once, for evaluation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from device.feeds.runner import SourceRunner
from device.grid import SampleGrid
from device.sources import SourceError
from device.vision.frame import Frame
from live.util.clock import Clock


class SourceEnded(SourceError):
    """The source has no more frames (end of a file)."""


class FrameSampler:
    def __init__(self, runner: SourceRunner, *, clock: Clock, pace: str = "realtime") -> None:
        self.runner = runner
        self.clock = clock
        self.is_camera = runner.source.is_camera
        self.realtime = pace == "realtime" and not self.is_camera
        self.name = runner.source.name
        self._origin: tuple[float, float] | None = None  # (clock, media t) of the first frame
        self._pushed_back: Frame | None = None
        self._last: Frame | None = None
        self._lock = anyio.Lock()

    def _due(self, frame: Frame) -> float:
        if self._origin is None or frame.t_media < self._origin[1]:
            # First frame, or a looped file started again: it is due now.
            self._origin = (self.clock.now(), frame.t_media)
        return self._origin[0] + (frame.t_media - self._origin[1])

    async def _read(self) -> Frame | None:
        if self._pushed_back is not None:
            pushed, self._pushed_back = self._pushed_back, None
            return pushed
        frame = await self.runner.next_frame()
        if frame is not None:
            self._last = frame
        return frame

    async def newest(self) -> Frame:
        """The newest frame: on a camera the next one it delivers; on a replay the one due now."""
        async with self._lock:
            frame = await self._read()
            if frame is None:
                raise SourceEnded(f"{self.name} has no more frames")
            if not self.realtime:
                return frame
            due = self._due(frame)
            if due > self.clock.now():
                await self.clock.sleep(due - self.clock.now())
                return frame
            # Behind the replay position: skip to the last frame that is already due.
            while True:
                following = await self._read()
                if following is None:
                    return frame
                if self._due(following) > self.clock.now():
                    self._pushed_back = following
                    return frame
                frame = following

    async def samples(self, fps: float, duration_s: float) -> AsyncIterator[Frame]:
        """Frames ``1/fps`` apart in media time, for ``duration_s`` from the first one.

        Ends early when a file ends. A replay at realtime pace takes as long
        as the span; at fast pace as long as the caller takes per frame.
        """
        if fps <= 0 or duration_s <= 0:
            raise ValueError("fps and duration_s must be positive")
        grid = SampleGrid(1.0 / fps)
        start: float | None = None
        while True:
            async with self._lock:
                frame = await self._read()
                if frame is not None and self.realtime:
                    delay = self._due(frame) - self.clock.now()
                    if delay > 0:
                        await self.clock.sleep(delay)
            if frame is None:
                return
            if start is None or frame.t_media < start:
                start = frame.t_media  # the first frame, or a looped file started again
                grid.reset()
            if frame.t_media - start >= duration_s:
                return
            if grid.take(frame.t_media):
                yield frame


__all__ = ["FrameSampler", "SourceEnded"]
