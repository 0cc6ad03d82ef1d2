"""One camera of the device: its parts, made in one place from its settings, and its run.

A camera is its source and how it is read (the runner: opening, reconnecting,
ending), its frame driver (pace, sampling, resizing), its perception (motion
gate, tracker, lines and zones, the count: one ``Perception`` with the device's
shared detector), its count's freshness and its scene's edits. Every camera's
perception publishes on the one bus (its percepts and events say whose they are:
``camera``), where the outputs and the session's feed (``session_feed.py``) take
them; the frames perception did not look at go to the session from here. One
camera's source failing or ending leaves the others counting: each runs in a
cancel scope of its own (``run``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio

from device.app.freshness import CountFreshness
from device.app.parts import (
    configured_perception,
    configured_runner,
    configured_source,
)
from device.app.scene.editor import SceneEditor
from device.bus import EventBus
from device.capture import Consumers, FrameDriver
from device.config import Config
from device.feeds.runner import SourceRunner
from device.sources import FrameSource, SourceError
from device.vision.percept import CountUnknown, Percept
from device.vision.perception import Perception
from device.vision.shared_detector import SharedDetector
from live.events import ErrorEvent
from live.requests import LiveRequestQueue
from live.util.clock import Clock


@dataclass
class Camera:
    """A camera's parts (``build_camera``) and how it runs."""

    name: str
    config: Config  # its settings: the device's with its own over them
    source: FrameSource
    perception: Perception
    freshness: CountFreshness
    source_runner: SourceRunner
    capture: FrameDriver  # its frames: paced, sampled, prepared, perceived
    queue: LiveRequestQueue[Percept | CountUnknown]  # where its frames go to the session
    scene: SceneEditor
    sample_fps: float
    clock: Clock
    failure: str | None = None  # why its source failed for good (None: it did not)
    ended: bool = False  # its source ended (a file), failed, or its duration passed
    # Detections (and motion-gated holds) a second over the last window while it counted
    # (None: not measured, or not counting), and whether that is short of its rate: the
    # shared detector cannot keep up (``detector_load.py``).
    achieved_fps: float | None = None
    behind: bool = False

    @property
    def live(self) -> bool:
        """A camera or stream (wall-clock time), rather than a file or a folder."""
        return self.source.is_camera

    @property
    def watched(self) -> bool:
        """Whether its count goes unknown when frames stop coming: always for a live
        source and a replay in real time; a fast replay waits for its consumers, and a
        pause there is not staleness."""
        return self.live or self.config.source.pace == "realtime"

    # What the page and /metrics read of it (``device/outputs/view.py:CameraView``).

    @property
    def source_fps(self) -> float | None:
        return self.source.fps

    @property
    def source_fps_note(self) -> str | None:
        # Only cameras that were asked for a rate say what they gave.
        note = getattr(self.source, "fps_note", None)
        return note if isinstance(note, str) else None

    @property
    def decode_ms(self) -> float | None:
        return self.source_runner.stats.decode_ms_mean

    @property
    def detect_fps(self) -> float:
        """The detections a second it asks for now (a scene edit may have raised it)."""
        return 1.0 / self.perception.interval

    async def capture_frames(self, on_failure: Callable[[str], None]) -> None:
        """Feed its frames until its source ends, fails, or its duration passes (a live
        source's duration is wall time; a file's, media time, is the frame driver's)."""
        duration = self.config.source.duration
        try:
            async with anyio.create_task_group() as group:
                if self.live and duration is not None:
                    group.start_soon(self._stop_after, duration, group.cancel_scope)
                await self._feed_session()
                group.cancel_scope.cancel()
        except SourceError as exc:
            self.failure = str(exc)
            on_failure(str(exc))
        finally:
            self.ended = True

    async def _feed_session(self) -> None:
        queue = self.queue
        while not queue.closed:
            sample = await self.capture.next()
            if sample is None or queue.closed:
                return
            if sample.percept is None:
                # Its percepts reach the session through the bus (``SessionFeed``); a
                # frame not looked at goes on for the model lane, by its camera's name.
                queue.send_realtime(frame=sample.frame, origin=self.name)

    async def _stop_after(self, seconds: float, scope: anyio.CancelScope) -> None:
        await self.clock.sleep(seconds)
        scope.cancel()


def build_camera(
    config: Config,
    *,
    clock: Clock,
    bus: EventBus,
    queue: LiveRequestQueue[Percept | CountUnknown],
    detector: SharedDetector,
    consumers: Consumers,
    sample_fps: float,
    source: FrameSource | None = None,
) -> Camera:
    """Camera ``config.camera_name`` from its settings (``config.camera(name)``) and the
    device's shared parts. ``source``: injected instead of the configured one (tests).
    Raises ConfigError or SourceError for what the user got wrong."""
    name = config.camera_name
    source = source or configured_source(config, clock)

    perception = configured_perception(
        config,
        config.detection_fps(),
        source,
        bus.publish,
        bus.percept,
        clock.now,
        detector=detector,
        camera=name,
    )
    freshness = CountFreshness(bus, perception, source, clock, camera=name)
    runner = configured_runner(
        config,
        source,
        clock,
        freshness.on_source_state,
        on_skipped=lambda message: bus.publish(
            ErrorEvent(message=_of(config, name, message), where="source")
        ),
    )
    request_fps = getattr(source, "request_fps", None)
    if request_fps is not None and config.source.camera_fps != 0:
        # A camera then sends little more than is sampled (0: leave it at its own rate).
        request_fps(sample_fps, config.source.camera_fps)
    capture = FrameDriver(
        runner,
        clock=clock,
        sample_fps=sample_fps,
        perceive=perception.process,
        max_side=config.source.max_side,
        jpeg_quality=config.source.jpeg_quality,
        pace=config.source.pace,
        is_camera=source.is_camera,
        consumers=consumers,  # a fast replay waits for the tools (and the model) to keep up
        media_duration_s=config.source.duration,
    )
    scene = SceneEditor(config, perception, bus.publish, capture=capture, sample_fps=sample_fps)
    return Camera(
        name=name,
        config=config,
        source=source,
        perception=perception,
        freshness=freshness,
        source_runner=runner,
        capture=capture,
        queue=queue,
        scene=scene,
        sample_fps=sample_fps,
        clock=clock,
    )


def _of(config: Config, name: str, message: str) -> str:
    """A camera's message, named when the device has several (``door: ...``)."""
    return f"{name}: {message}" if config.named_cameras else message


__all__ = ["Camera", "build_camera"]
