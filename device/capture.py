"""The capture loop: source frames -> paced, sampled, resized -> perception -> the session.

The loop decides *which* frames go on and when: files are replayed in real
time (by their timestamps) or as fast as the pipeline goes; live sources are
sampled as they come. The feed is told from which media time on the next
frame is wanted, so frames the sampler would drop are not decoded at all.
Each sampled frame is resized (in a worker thread, only when it is larger
than ``max_side``), handed to perception, and put into the request queue
with what perception made of it. No JPEG is made here: a frame
is encoded only when something (the model lane, a viewer) asks for it.

With ``--pace fast`` the loop waits until every input-consuming tool has
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
from device.vision.percept import CountUnknown, Percept
from live.requests import LiveRequestQueue
from live.util.clock import Clock

log = logging.getLogger("lookout.capture")

Perceive = Callable[[Frame], Awaitable[Percept | None]]


class FrameFeed(Protocol):
    async def next_frame(self, *, not_before: float | None = None) -> Frame | None:
        """The next frame at ``not_before`` or later (earlier ones may be skipped undecoded)."""
        ...

    @property
    def frames_undecoded(self) -> int:
        """Frames skipped so far without decoding them."""
        ...


class Consumers(Protocol):
    """Who takes the frames the loop puts in the queue: the fast pace waits for them (a
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


class CaptureLoop:
    def __init__(
        self,
        feed: FrameFeed,
        queue: LiveRequestQueue[Percept | CountUnknown],
        *,
        clock: Clock,
        sample_fps: float,
        perceive: Perceive | None = None,
        max_side: int = 768,
        jpeg_quality: int = 80,
        pace: str = "realtime",
        is_camera: bool = False,
        consumers: Consumers | None = None,
        consumer_wait_s: float = 5.0,
        media_duration_s: float | None = None,
        on_frame: Callable[[Frame], None] | None = None,
        origin: str = "",
    ) -> None:
        """``media_duration_s``: a file or folder ends after that much of its media time,
        however fast it is replayed (a camera's duration is wall time: the app's).
        ``origin``: the camera its frames are said to come from in the queue."""
        self.feed = feed
        self.queue = queue
        self.clock = clock
        self.interval = 1.0 / sample_fps
        self.perceive = perceive
        self.max_side = max_side
        self.jpeg_quality = jpeg_quality
        self.pace = pace
        self.is_camera = is_camera
        self.consumers = consumers
        self.consumer_wait_s = consumer_wait_s
        self.media_duration_s = media_duration_s
        self.on_frame = on_frame
        self.origin = origin
        self.stats = CaptureStats()
        self._limiter = anyio.CapacityLimiter(1)
        self._grid: SampleGrid | None = None

    def set_sample_fps(self, sample_fps: float) -> None:
        """Sample at ``sample_fps`` from the next frame on."""
        self.interval = 1.0 / sample_fps
        if self._grid is not None:
            self._grid.interval = self.interval

    async def run(self) -> None:
        """Feed frames until the source ends (files) or the loop is cancelled."""
        grid = self._grid = SampleGrid(self.interval)
        next_sample: float | None = None  # from when the next frame is wanted
        replay_origin: tuple[float, float] | None = None  # (clock, media t) at the first frame
        fast = self.pace == "fast" and not self.is_camera
        first_t: float | None = None
        if fast and self.consumers is not None:
            # A model that calls its tools at once should see the replay from its start;
            # one that is slow or absent must not hold the device up for long.
            with anyio.move_on_after(self.consumer_wait_s):
                await self.consumers.wait_input_consumer()
        limit = None if self.is_camera else self.media_duration_s
        undecoded = self.feed.frames_undecoded
        while not self.queue.closed:
            wanted = next_sample
            if wanted is not None and limit is not None and first_t is not None:
                # The frame that ends the stretch must come through, decoded or not.
                wanted = min(wanted, first_t + limit)
            frame = await self.feed.next_frame(not_before=wanted)
            skipped, undecoded = self.feed.frames_undecoded - undecoded, self.feed.frames_undecoded
            self.stats.frames_undecoded += skipped
            if not self.is_camera:
                # A file's skipped frames were read and dropped for the rate, as before;
                # only their decoding was saved. (A camera's were never counted: they
                # were overwritten by newer ones before the loop saw them.)
                self.stats.frames_read += skipped
                self.stats.dropped["rate"] += skipped
            if frame is None:
                return
            t = frame.t_media
            if first_t is None:
                first_t = t
            if limit is not None and t - first_t >= limit - 1e-9:
                return  # the asked-for stretch of the recording is done
            self.stats.frames_read += 1
            self.stats.last_frame_t = t
            if not grid.take(t):
                self.stats.dropped["rate"] += 1
                continue
            next_sample = grid.next_point
            if not self.is_camera and self.pace == "realtime":
                if replay_origin is None or t < replay_origin[1]:
                    replay_origin = (self.clock.now(), t)
                delay = replay_origin[0] + (t - replay_origin[1]) - self.clock.now()
                if delay > 0:
                    await self.clock.sleep(delay)
                elif delay < -2 * self.interval:
                    # Far behind (a slow machine): skip rather than build up lag.
                    self.stats.dropped["late"] += 1
                    continue
            self.stats.frames_sampled += 1
            if fast and self.consumers is not None:
                # An evaluation replay: every tool took the last frame, and a connected
                # model heard every change, before the next frame goes in.
                await self.consumers.wait_inputs_idle()
                await self.consumers.wait_delivered()
            try:
                frame = await self._prepare(frame)
            except Exception as exc:  # a corrupt frame must not end the capture
                self.stats.dropped["unusable"] += 1
                log.warning("frame %d is unusable: %s", frame.index, exc)
                continue
            percept = await self.perceive(frame) if self.perceive is not None else None
            if self.queue.closed:
                return
            self.queue.send_realtime(frame=frame, percept=percept, origin=self.origin)
            if self.on_frame is not None:
                self.on_frame(frame)

    async def _prepare(self, frame: Frame) -> Frame:
        start = time.perf_counter()
        ready = await prepared(frame, self.max_side, self.jpeg_quality, limiter=self._limiter)
        if ready.image is not frame.image:
            self.stats.frames_resized += 1
            self.stats.resize_ms_total += (time.perf_counter() - start) * 1000
        return ready


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
    "CaptureLoop",
    "CaptureStats",
    "Consumers",
    "FrameFeed",
    "check_image",
    "prepared",
    "resized",
]
