"""The count of one source as the device says it: a percept per frame, an event per change.

``Perception`` (``device/vision/perception.py``) gates, detects and tracks; this
keeps what came of it and tells it: the count last published, the newest
percept while the count is known, why it is unknown otherwise, and when the
device last looked. Every percept goes to the subscriber and every change of
the count out as a ``count`` event, in frame order. Losing the count is said
once (a null ``count`` event, and a ``CountUnknown`` where the percepts go), and a
failing detector once per run of failures.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable

from device.events import CameraEvent, CountChanged
from device.vision.frame import Frame
from device.vision.percept import MAIN_CAMERA, CountUnknown, Perceived, Percept, Track
from device.vision.scene import Scene
from live.events import ErrorEvent, Event
from models.detections import Detections

log = logging.getLogger("lookout.perception")


class CountReport:
    """What one source's count is now, and who is told of each frame and each change."""

    def __init__(
        self,
        scene: Scene,
        *,
        publish: Callable[[Event], None],
        on_percept: Callable[[Perceived], None],
        now: Callable[[], float],
        camera: str = MAIN_CAMERA,
    ) -> None:
        """``camera``: whose count it is; its percepts and events say so."""
        self._scene = scene
        self.camera = camera
        self._publish_any = publish
        self._on_percept = on_percept
        self._now = now
        self.latest: Percept | None = None  # the newest percept while the count is known
        self.count: int | None = None  # the count last published
        self.unknown_reason = "no frame yet"
        self.last_at: float | None = None  # when the newest percept was made (``now`` clock)
        self.error_said = False  # this run of detector failures has been said
        self._seq = 0

    @property
    def known(self) -> bool:
        return self.latest is not None and self.latest.count is not None

    def _publish(self, event: Event) -> None:
        if isinstance(event, CameraEvent) and event.camera != self.camera:
            event = dataclasses.replace(event, camera=self.camera)
        self._publish_any(event)

    def perceived(
        self,
        frame: Frame,
        tracks: tuple[Track, ...],
        people: tuple[Track, ...],
        scene_events: list[Event],
        *,
        shown: tuple[Detections, int],
        detect_ms: float,
        motion: float | None,
        gated: bool = False,
    ) -> Percept:
        """The count, the percept and the events of a frame the tracker has seen.

        ``shown``: the last detector output at the user's threshold and its raw number.
        """
        # A gated frame is as fresh as a detected one: the device looked, nothing moved.
        self.last_at = self._now()
        detections, raw = shown
        previous, count = self.count, len(people)
        changed = count != previous
        self.count = count
        self._seq += 1
        percept = Percept(
            frame=frame,
            detections=detections,
            raw=raw,
            count=count,
            previous=previous,
            changed=changed,
            detect_ms=detect_ms,
            seq=self._seq,
            tracks=tracks,
            lines=self._scene.line_totals(),
            zones=self._scene.zone_states(),
            gated=gated,
            motion=motion,
            people=people,
            camera=self.camera,
        )
        self.latest = percept
        if changed:
            self._publish(
                CountChanged(
                    count=count,
                    previous=previous,
                    raw=raw,
                    t_media=frame.t_media,
                    frame=frame.index,
                )
            )
        for event in scene_events:
            self._publish(event)
        self._deliver(percept)
        return percept

    def failed(self, frame: Frame, exc: Exception) -> Percept:
        """The detector could not use ``frame``: the count stands as it was."""
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if not self.error_said:
            # Once per run of failures: a broken camera feed must not flood the log.
            self.error_said = True
            log.warning("detector failed on frame %d: %s", frame.index, reason)
            self._publish(ErrorEvent(message=f"detector failed: {reason}", where="perception"))
        # Not fresher for it: a camera that only gives unusable frames must go stale.
        self._seq += 1
        count = self.count
        percept = Percept(
            frame=frame,
            detections=Detections.empty(),
            raw=0,
            count=count,
            previous=count,
            changed=False,
            detect_ms=0.0,
            seq=self._seq,
            error=reason[:200],
            lines=self._scene.line_totals(),
            zones=self._scene.zone_states(),
            camera=self.camera,
        )
        self._deliver(percept)
        return percept

    def lose(self, reason: str, t_media: float | None, scene_events: Iterable[Event]) -> bool:
        """The count no longer holds: tell ``scene_events``, then that it is unknown, once.

        Returns whether it was known.
        """
        was_known = self.known
        previous = self.count
        self.unknown_reason = reason
        self.latest = None
        self.count = None
        for event in scene_events:
            self._publish(event)
        if was_known:
            # At the newest frame seen: the count held that long, in the source's time.
            self._publish(
                CountChanged(count=None, previous=previous, reason=reason, t_media=t_media)
            )
            self._deliver(CountUnknown(reason, camera=self.camera))
        return was_known

    def look_afresh(self) -> None:
        """The next frame is looked at as a first one (a cut): nothing held from before
        it, while the count stands until that frame gives the next."""
        self.latest = None

    def said(self, events: Iterable[Event]) -> None:
        """Publish ``events`` of this camera (a scene's, outside a frame: a cut)."""
        for event in events:
            self._publish(event)

    def _deliver(self, percept: Perceived) -> None:
        try:
            self._on_percept(percept)
        except Exception:
            log.exception("a percept subscriber failed")


__all__ = ["CountReport"]
