"""The ``count_people`` streaming tool: people count changes from camera frames.

It consumes its call's input stream, runs the ONNX person detector in a worker
thread on the decoded frame that travels beside each JPEG (decoding the JPEG
only when no frame is attached), at most ``max_fps`` frames per second of
media time, always on the newest frame, and yields only *changes* of the
smoothed count. Every change is also published as a ``count`` event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import anyio
import numpy as np

from live import InputStream, ToolArgumentError, ToolContext
from live.events import Event
from live.requests import LiveRequest
from models.detector import Detections, PersonDetector
from tools.smoothing import CountSmoother

log = logging.getLogger("lookout.count_people")


class Detector(Protocol):
    def detect(self, frame_bgr: np.ndarray) -> Detections: ...


DetectorFactory = Callable[[], Detector]


class SharedDetector:
    """One detector for all the calls of a tool.

    An object with ``.detect()`` is the detector; anything else is a factory,
    called lazily in a worker thread (loading a model takes a while).
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


@dataclass(frozen=True, kw_only=True)
class CountChanged(Event):
    """A change of the smoothed people count (``t_media``: the frame's capture time)."""

    type: ClassVar[str] = "count"
    id: str
    count: int
    previous: int | None
    raw: int
    t_media: float


@dataclass(frozen=True)
class FrameResult:
    """What the detector made of one frame; handed to observers (status page, metrics)."""

    call_id: str
    t_media: float
    raw: int
    count: int | None
    detections: Detections
    frame: np.ndarray | None
    detect_ms: float


@dataclass
class CountStats:
    processed: int = 0
    skipped_rate: int = 0
    corrupt: int = 0
    detector_errors: int = 0


def decode_jpeg(data: bytes) -> np.ndarray | None:
    import cv2

    if not data:
        return None
    array = np.frombuffer(data, dtype=np.uint8)
    image = cv2.imdecode(array, cv2.IMREAD_COLOR)
    if image is None or image.ndim != 3 or image.shape[2] != 3:
        return None
    return image


def parse_region(region: Sequence[Sequence[float]] | None) -> np.ndarray | None:
    """A normalised polygon (at least 3 points with 0 <= x, y <= 1) as an (N, 2) array."""
    if region is None:
        return None
    if len(region) < 3:
        raise ToolArgumentError("count_people: region needs at least 3 points [[x, y], ...]")
    points = []
    for i, point in enumerate(region):
        if len(point) != 2:
            raise ToolArgumentError(f"count_people: region[{i}] must be [x, y]")
        x, y = float(point[0]), float(point[1])
        if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
            raise ToolArgumentError(
                f"count_people: region[{i}] = [{x:g}, {y:g}] is outside 0..1 (normalised)"
            )
        points.append((x, y))
    return np.asarray(points, dtype=np.float64)


def check_count_args(args: dict[str, Any]) -> None:
    """Range checks the declaration cannot express; raises ToolArgumentError."""
    min_change = args.get("min_change", 1)
    if min_change < 1:
        raise ToolArgumentError(f"count_people: min_change must be at least 1, got {min_change}")
    parse_region(args.get("region"))


def inside(polygon: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Ray-casting point-in-polygon for many points at once."""
    x, y = points[:, 0:1], points[:, 1:2]
    x1, y1 = polygon[:, 0], polygon[:, 1]
    x2, y2 = np.roll(x1, -1), np.roll(y1, -1)
    crosses = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        x_at = (x2 - x1) * (y - y1) / (y2 - y1) + x1
    result: np.ndarray = np.logical_and(crosses, x < x_at).sum(axis=1) % 2 == 1
    return result


def count_in_region(
    detections: Detections, shape: tuple[int, ...], region: np.ndarray | None
) -> int:
    if region is None or len(detections) == 0:
        return len(detections)
    height, width = shape[:2]
    # A person stands where their feet are: the bottom centre of the box.
    feet = np.stack(
        [
            (detections.boxes[:, 0] + detections.boxes[:, 2]) / 2 / width,
            detections.boxes[:, 3] / height,
        ],
        axis=1,
    )
    return int(inside(region, feet).sum())


@dataclass
class CountPeople:
    """Factory of the ``count_people`` tool; one detector shared by all its calls."""

    detector: Detector | DetectorFactory = field(default=PersonDetector)
    max_fps: float = 2.0
    k: int = 3
    min_hold_s: float = 1.0
    # Consecutive unusable frames before the model is told (once) that input is broken.
    failure_alarm: int = 10
    observers: list[Callable[[FrameResult], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._shared = SharedDetector(self.detector)
        self.stats = CountStats()

    async def load(self) -> Detector:
        return await self._shared.load()

    def _detect(self, request: LiveRequest) -> tuple[np.ndarray | None, Detections | None, float]:
        import time

        frame = request.frame
        if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.dtype == np.uint8):
            data = request.blob.data if request.blob is not None else None
            frame = decode_jpeg(data or b"")
            if frame is None:
                return None, None, 0.0
        start = time.perf_counter()
        detections = self._shared.get().detect(frame)
        return frame, detections, (time.perf_counter() - start) * 1000

    async def __call__(
        self,
        stream: InputStream,
        context: ToolContext,
        min_change: int = 1,
        region: list[list[float]] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Count the people in view and report whenever the number changes.

        Reports {"people": n, "previous": m} once at the start and then only when the
        count changes. Keep it running; call stop_streaming to end it.

        Args:
            min_change: report only changes of at least this many people (default 1).
            region: optional area to count in, a polygon of [x, y] points normalised to
                0..1 of the image width and height; people whose feet are inside count.
        """
        if min_change < 1:
            raise ToolArgumentError("count_people: min_change must be at least 1")
        polygon = parse_region(region)
        await self.load()  # a missing or corrupt model fails the call here, clearly
        smoother = CountSmoother(k=self.k, min_hold_s=self.min_hold_s, min_change=min_change)
        interval = 1.0 / self.max_fps if self.max_fps > 0 else 0.0
        last_t: float | None = None
        failures = 0
        alarmed = False
        while True:
            try:
                request = await stream.newest()
            except anyio.EndOfStream:
                return
            t = request.t_capture if request.t_capture is not None else context.clock.now()
            if last_t is not None and t - last_t < interval - 1e-6:
                self.stats.skipped_rate += 1
                continue
            try:
                frame, detections, detect_ms = await anyio.to_thread.run_sync(
                    self._detect, request, limiter=self._shared.limiter
                )
            except Exception as exc:
                # One bad inference must not end the stream; a persistent failure is reported.
                self.stats.detector_errors += 1
                context.logger.warning("detector failed on a frame: %s", exc)
                frame, detections = None, None
                detect_ms = 0.0
            if frame is None or detections is None:
                if frame is None:
                    self.stats.corrupt += 1
                failures += 1
                if failures >= self.failure_alarm and not alarmed:
                    alarmed = True
                    yield {
                        "status": "error",
                        "error": f"{failures} frames in a row could not be used "
                        "(corrupt image or detector failure); still trying",
                        "people": smoother.reported,
                    }
                continue
            if alarmed:
                alarmed = False
            failures = 0
            last_t = t
            self.stats.processed += 1
            raw = count_in_region(detections, frame.shape, polygon)
            change = smoother.update(raw, t)
            result = FrameResult(
                context.call_id, t, raw, smoother.reported, detections, frame, detect_ms
            )
            for observer in self.observers:
                try:
                    observer(result)
                except Exception:
                    log.exception("count observer failed")
            if change is not None:
                context.publish(
                    CountChanged(
                        id=context.call_id,
                        count=change.count,
                        previous=change.previous,
                        raw=raw,
                        t_media=t,
                    )
                )
                yield {"people": change.count, "previous": change.previous}
