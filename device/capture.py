"""The capture loop: source frames -> paced, sampled, resized, JPEG -> the request queue.

Reading, resizing and JPEG encoding run in worker threads; the loop itself
only decides *which* frames go on. Files can be replayed in real time (by
their timestamps) or as fast as the pipeline goes; in the fast pace the loop
waits until every input-consuming tool has processed the previous frame, so a
replay yields the same results at any speed and machine.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import anyio
import cv2
import numpy as np
from google.genai import types

from device.sources import Frame
from live.clock import Clock
from live.requests import LiveRequestQueue

log = logging.getLogger("lookout.capture")


class FrameFeed(Protocol):
    async def next_frame(self) -> Frame | None: ...


class InputGate(Protocol):
    """What the fast pace waits on (a LiveSession)."""

    async def wait_input_consumer(self) -> None: ...

    async def wait_inputs_idle(self) -> None: ...


@dataclass
class CaptureStats:
    frames_read: int = 0
    frames_sampled: int = 0
    frames_encoded: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    encode_ms_total: float = 0.0
    last_frame_t: float | None = None

    @property
    def encode_ms_mean(self) -> float:
        return self.encode_ms_total / self.frames_encoded if self.frames_encoded else 0.0


@dataclass(frozen=True)
class EncodedFrame:
    image: np.ndarray  # resized BGR
    jpeg: bytes
    t: float
    index: int


def resize_and_encode(image: np.ndarray, max_side: int, quality: int) -> tuple[np.ndarray, bytes]:
    height, width = image.shape[:2]
    scale = max_side / max(height, width)
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return image, data.tobytes()


class CaptureLoop:
    def __init__(
        self,
        feed: FrameFeed,
        queue: LiveRequestQueue,
        *,
        clock: Clock,
        sample_fps: float,
        max_side: int = 768,
        jpeg_quality: int = 80,
        pace: str = "realtime",
        live: bool = False,
        gate: InputGate | None = None,
        on_frame: Callable[[EncodedFrame], None] | None = None,
    ) -> None:
        self.feed = feed
        self.queue = queue
        self.clock = clock
        self.interval = 1.0 / sample_fps
        self.max_side = max_side
        self.jpeg_quality = jpeg_quality
        self.pace = pace
        self.live = live
        self.gate = gate
        self.on_frame = on_frame
        self.stats = CaptureStats()
        self._limiter = anyio.CapacityLimiter(1)

    async def run(self) -> None:
        """Feed frames until the source ends (files) or the loop is cancelled."""
        next_sample: float | None = None
        replay_origin: tuple[float, float] | None = None  # (wall, media) at the first frame
        fast = self.pace == "fast" and not self.live
        if fast and self.gate is not None:
            # Nothing is processed until a tool consumes frames; don't race past the start.
            await self.gate.wait_input_consumer()
        while not self.queue.closed:
            frame = await self.feed.next_frame()
            if frame is None:
                return
            self.stats.frames_read += 1
            self.stats.last_frame_t = frame.t
            if next_sample is not None and frame.t < next_sample - 1e-6:
                self.stats.dropped["rate"] += 1
                continue
            # Keep a fixed sampling grid so the rate does not drift with jitter.
            if next_sample is None or frame.t - next_sample > self.interval:
                next_sample = frame.t
            next_sample += self.interval
            if not self.live and self.pace == "realtime":
                if replay_origin is None or frame.t < replay_origin[1]:
                    replay_origin = (self.clock.now(), frame.t)
                due = replay_origin[0] + (frame.t - replay_origin[1])
                delay = due - self.clock.now()
                if delay > 0:
                    await self.clock.sleep(delay)
                elif delay < -2 * self.interval:
                    # Far behind (a slow machine): skip rather than build up lag.
                    self.stats.dropped["late"] += 1
                    continue
            self.stats.frames_sampled += 1
            if fast and self.gate is not None:
                await self.gate.wait_inputs_idle()
            try:
                encoded = await anyio.to_thread.run_sync(self._encode, frame, limiter=self._limiter)
            except Exception as exc:  # a corrupt frame must not end the capture
                self.stats.dropped["encode_error"] += 1
                log.warning("frame %d could not be encoded: %s", frame.index, exc)
                continue
            if self.queue.closed:
                return
            self.queue.send_realtime(
                types.Blob(data=encoded.jpeg, mime_type="image/jpeg"),
                frame=encoded.image,
                t=frame.t,
            )
            if self.on_frame is not None:
                self.on_frame(encoded)

    def _encode(self, frame: Frame) -> EncodedFrame:
        start = time.perf_counter()
        image = frame.image
        if not (isinstance(image, np.ndarray) and image.ndim == 3 and image.shape[2] == 3):
            raise ValueError(f"unusable frame of shape {getattr(image, 'shape', None)}")
        if image.dtype != np.uint8:
            raise ValueError(f"unusable frame of dtype {image.dtype}")
        resized, jpeg = resize_and_encode(image, self.max_side, self.jpeg_quality)
        self.stats.frames_encoded += 1
        self.stats.encode_ms_total += (time.perf_counter() - start) * 1000
        return EncodedFrame(resized, jpeg, frame.t, frame.index)
