"""The frame driver: a feed's frames -> paced, sampled, prepared -> perceived -> the caller.

Every command that looks at frames takes them through ``FrameDriver``: ``lookout
run`` (each camera's capture, ``device/app/camera.py``), ``lookout count``,
``lookout ask``'s look at a source, and the benchmarks. So the same frames of a
recording are sampled, resized and perceived the same way whichever asks.

The driver decides *which* frames go on and when: files are replayed in real
time (by their timestamps) or as fast as the pipeline goes; live sources are
sampled as they come. The feed is told from which media time on the next
frame is wanted, so frames the sampler would drop are not decoded at all.
Each sampled frame is checked and resized (in a worker thread, only when it is
larger than ``max_side``) and handed to perception, which publishes what it
made of it; ``next`` returns the frame with its percept (None off the
detection grid). No JPEG is made here: a frame is encoded only when something
(the model lane, a viewer) asks for it.

With ``--pace fast`` the driver waits until every input-consuming tool has
taken the previous frame, so a replay gives the same results at any speed
and on any machine.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import cv2
import numpy as np

from device.grid import SampleGrid
from device.vision.frame import Frame
from device.vision.percept import Percept
from live.util.clock import Clock

log = logging.getLogger("lookout.capture")


class Perceive(Protocol):
    """Perception's step (``Perception.process``): ``force`` looks at a frame off the grid."""

    def __call__(self, frame: Frame, *, force: bool = ...) -> Awaitable[Percept | None]: ...


@dataclass(frozen=True)
class Sample:
    """A frame the driver took, prepared, and what perception made of it (None: off the
    detection grid, or no perception)."""

    frame: Frame
    percept: Percept | None


class FrameFeed(Protocol):
    async def next_frame(self, *, not_before: float | None = None) -> Frame | None:
        """The next frame at ``not_before`` or later (earlier ones may be skipped undecoded)."""
        ...

    @property
    def frames_undecoded(self) -> int:
        """Frames skipped so far without decoding them."""
        ...


class Consumers(Protocol):
    """Who takes the frames the driver hands on: the fast pace waits for them (a
    LiveSession: its input-consuming tools and the model)."""

    async def wait_input_consumer(self) -> None: ...

    async def wait_inputs_idle(self) -> None: ...

    async def wait_delivered(self) -> None: ...


@dataclass
class CaptureStats:
    frames_read: int = 0
    frames_sampled: int = 0
    frames_resized: int = 0
    frames_undecoded: int = 0  # of frames_read, those the feed skipped without decoding
    dropped: Counter[str] = field(default_factory=Counter)
    resize_ms_total: float = 0.0
    last_frame_t: float | None = None

    @property
    def resize_ms_mean(self) -> float:
        return self.resize_ms_total / self.frames_resized if self.frames_resized else 0.0


def check_image(image: object) -> np.ndarray:
    """The image if it is a usable BGR frame, else ValueError saying what is wrong."""
    if not (isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3):
        raise ValueError(f"unusable frame of shape {getattr(image, 'shape', None)}")
    if image.dtype != np.uint8:
        raise ValueError(f"unusable frame of dtype {image.dtype}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError("empty frame")
    return image


def resized(image: np.ndarray, max_side: int) -> np.ndarray:
    height, width = image.shape[:2]
    scale = max_side / max(height, width)
    if scale >= 1.0:
        return image
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return np.asarray(cv2.resize(image, size, interpolation=cv2.INTER_AREA))


class FrameDriver:
    """Frames from ``feed``, one sample at a time (``next``)."""

    def __init__(
        self,
        feed: FrameFeed,
        *,
        clock: Clock,
        sample_fps: float | None,
        perceive: Perceive | None = None,
        max_side: int = 768,
        jpeg_quality: int | None = 80,
        pace: str = "realtime",
        is_camera: bool = False,
        consumers: Consumers | None = None,
        consumer_wait_s: float = 5.0,
        media_duration_s: float | None = None,
        every: int | None = None,
        on_unusable: Callable[[Frame, Exception], None] | None = None,
    ) -> None:
        """``sample_fps``: frames taken a second of media time (None: every frame; the
        perception's own grid then picks those it detects on).
        ``every``: take every Nth frame by its index instead, each looked at by perception.
        ``jpeg_quality``: the quality a frame is encoded at when asked (None: its own).
        ``media_duration_s``: a file or folder ends after that much of its media time,
        however fast it is replayed (a camera's duration is wall time: the app's).
        ``on_unusable``: told of a frame that is not an image (it is left out; by default
        a warning says so)."""
        if every is not None and every < 1:
            raise ValueError(f"every must be 1 or more, not {every}")
        self.feed = feed
        self.clock = clock
        self.perceive = perceive
        self.max_side = max_side
        self.jpeg_quality = jpeg_quality
        self.pace = pace
        self.is_camera = is_camera
        self.consumers = consumers
        self.consumer_wait_s = consumer_wait_s
        self.media_duration_s = None if is_camera else media_duration_s
        self.every = every
        self.on_unusable = on_unusable or _say_unusable
        self.stats = CaptureStats()
        self._limiter = anyio.CapacityLimiter(1)
        self._grid = SampleGrid(1.0 / sample_fps) if sample_fps is not None else None
        self._fast = pace == "fast" and not is_camera
        self._started = False
        self._ended = False
        self._next_sample: float | None = None  # from when the next frame is wanted
        self._replay_origin: tuple[float, float] | None = None  # (clock, media t) of a replay
        self._first_t: float | None = None
        self._undecoded = 0
        self._cut = False  # a cut fell on a frame left out: the next one taken carries it

    @property
    def interval(self) -> float | None:
        """Seconds of media time between samples (None: every frame is taken)."""
        return self._grid.interval if self._grid is not None else None

    def set_sample_fps(self, sample_fps: float) -> None:
        """Sample at ``sample_fps`` from the next frame on."""
        if self._grid is None:
            self._grid = SampleGrid(1.0 / sample_fps)
        else:
            self._grid.interval = 1.0 / sample_fps

    async def next(self, *, force: bool = False) -> Sample | None:
        """The next sample; None once the source has ended or the asked-for stretch of a
        recording is done. ``force``: perception looks at it even off its grid.
        Raises what the feed raises (SourceError once a source has failed)."""
        if self._ended:
            return None
        if not self._started:
            self._started = True
            self._undecoded = self.feed.frames_undecoded
            if self._fast and self.consumers is not None:
                # A model that calls its tools at once should see the replay from its
                # start; one that is slow or absent must not hold the device up for long.
                with anyio.move_on_after(self.consumer_wait_s):
                    await self.consumers.wait_input_consumer()
        stats, limit = self.stats, self.media_duration_s
        while True:
            wanted = self._next_sample
            if wanted is not None and limit is not None and self._first_t is not None:
                # The frame that ends the stretch must come through, decoded or not.
                wanted = min(wanted, self._first_t + limit)
            frame = await self.feed.next_frame(not_before=wanted)
            undecoded = self.feed.frames_undecoded
            skipped, self._undecoded = undecoded - self._undecoded, undecoded
            stats.frames_undecoded += skipped
            if not self.is_camera:
                # A file's skipped frames were read and dropped for the rate; only their
                # decoding was saved. (A camera's were never counted: they were
                # overwritten by newer ones before the driver saw them.)
                stats.frames_read += skipped
                stats.dropped["rate"] += skipped
            if frame is None:
                self._ended = True
                return None
            t = frame.t_media
            if self._first_t is None:
                self._first_t = t
            if limit is not None and t - self._first_t >= limit - 1e-9:
                self._ended = True
                return None
            stats.frames_read += 1
            stats.last_frame_t = t
            if frame.cut and self._grid is not None:
                self._grid.reset()  # a cut starts the sampling afresh: this frame is taken
            self._cut = self._cut or frame.cut
            if not self._take(frame):
                stats.dropped["rate"] += 1
                continue
            if not self.is_camera and self.pace == "realtime":
                if self._replay_origin is None or t < self._replay_origin[1]:
                    self._replay_origin = (self.clock.now(), t)
                delay = self._replay_origin[0] + (t - self._replay_origin[1]) - self.clock.now()
                if delay > 0:
                    await self.clock.sleep(delay)
                elif self._grid is not None and delay < -2 * self._grid.interval:
                    # Far behind (a slow machine): skip rather than build up lag.
                    stats.dropped["late"] += 1
                    continue
            stats.frames_sampled += 1
            if self._fast and self.consumers is not None:
                # An evaluation replay: every tool took the last frame, and a connected
                # model heard every change, before the next frame goes in.
                await self.consumers.wait_inputs_idle()
                await self.consumers.wait_delivered()
            try:
                frame = await self._prepare(frame)
            except Exception as exc:  # a corrupt frame must not end the capture
                stats.dropped["unusable"] += 1
                self.on_unusable(frame, exc)
                continue
            if self._cut:
                frame, self._cut = frame.as_cut(), False
            if self.perceive is None:
                return Sample(frame, None)
            percept = await self.perceive(frame, force=force or self.every is not None)
            return Sample(frame, percept)

    def _take(self, frame: Frame) -> bool:
        """Whether ``frame`` is one to sample (the grid moves on if so)."""
        if self.every is not None:
            return frame.index % self.every == 0
        if self._grid is None:
            return True
        if not self._grid.take(frame.t_media):
            return False
        self._next_sample = self._grid.next_point
        return True

    async def _prepare(self, frame: Frame) -> Frame:
        start = time.perf_counter()
        ready = await prepared(frame, self.max_side, self.jpeg_quality, limiter=self._limiter)
        if ready.image is not frame.image:
            self.stats.frames_resized += 1
            self.stats.resize_ms_total += (time.perf_counter() - start) * 1000
        return ready


def _say_unusable(frame: Frame, exc: Exception) -> None:
    log.warning("frame %d is unusable: %s", frame.index, exc)


async def prepared(
    frame: Frame,
    max_side: int,
    jpeg_quality: int | None = None,
    *,
    limiter: anyio.CapacityLimiter | None = None,
) -> Frame:
    """``frame`` checked and resized to at most ``max_side`` pixels (in a worker thread).

    What every command does to a frame before perception, so that ``lookout run``,
    ``count`` and ``ask`` detect on the same pixels. Raises on an unusable image.
    """
    image = check_image(frame.image)
    quality = frame.jpeg_quality if jpeg_quality is None else jpeg_quality
    if max(image.shape[:2]) <= max_side:
        if frame.jpeg_quality != quality:
            return frame.with_image(image, jpeg_quality=quality)
        return frame
    small = await anyio.to_thread.run_sync(resized, image, max_side, limiter=limiter)
    return frame.with_image(small, jpeg_quality=quality)


__all__ = [
    "CaptureStats",
    "Consumers",
    "FrameDriver",
    "FrameFeed",
    "Perceive",
    "Sample",
    "check_image",
    "prepared",
    "resized",
]
