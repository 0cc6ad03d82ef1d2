"""One camera as its events and percepts say it: its count, lines, zones and frame to show.

``CameraState`` is fed by the telemetry (``telemetry.py``) with what perception
publishes of its camera (``camera`` names it) and with its events. The state shown is
perception's, from its percepts alone: each gives the count, the latest frame with its
boxes, the raw count, the detector latency, the tracks and the lines' totals and
zones' states, and a ``CountUnknown`` makes the count (and every zone) unknown with
its reason. Events add what percepts do not carry: the count's history (a point per
``count`` event), scene edits and the source's state. So nothing here reconciles two
versions of a count. It keeps only the current state, a short count history and a
reference to the newest frame, so feeding it costs the pipeline next to nothing. An
unknown count makes every zone unknown with it. Its views (the page's JSON for the
camera, its health, its snapshot) are made here from the same fields; what is the
device's (the model, the streams, MQTT) is the telemetry's.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from device.config import Config
from device.events import CountChanged, SceneChanged, SourceStateEvent
from device.feeds.runner import SourceState
from device.outputs.changes import Changes
from device.outputs.health import OK, Health
from device.outputs.page.render import DisplayFrame, SceneGeometry, render_jpeg
from device.outputs.page.scene_json import lines_json, track_json, zones_json
from device.outputs.view import CameraView
from device.vision.percept import CountUnknown, LineTotals, Perceived, Track, ZoneState
from live.events import Event
from live.util.redact import strip_credentials

RATE_WINDOW_S = 10.0  # detector runs per second are counted over this much time


class Observer(Protocol):
    """Where a detector latency goes (a labelled Prometheus histogram's child)."""

    def observe(self, amount: float) -> None: ...


def scene_geometry(config: Config) -> SceneGeometry:
    """The configured lines and zones, where the page draws them."""
    return SceneGeometry(
        lines={name: spec.points for name, spec in config.scene.lines.items()},
        zones={name: spec.points for name, spec in config.scene.zones.items()},
    )


def _unknown_zone(state: ZoneState) -> ZoneState:
    return ZoneState(state.name, None, dwell_s=state.dwell_s)


class CameraState:
    """One camera's current state, its count history, and the frame to show."""

    def __init__(
        self,
        camera: CameraView,
        changes: Changes,
        latency: Observer,
        *,
        history_s: float = 600.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.camera = camera
        self.name = camera.name
        config = camera.config
        self.privacy = config.device.privacy
        self.history_s = history_s
        self._monotonic = monotonic
        self._latency = latency
        self.count: int | None = None
        self.count_reason = "no frame yet"  # why the count is unknown, while it is
        self.raw: int | None = None
        self.count_changes = 0
        self.detect_ms: float | None = None
        self.gated = False  # the last percept held the scene: nothing moved (motion gate)
        self.motion: float | None = None  # the share of the last frame that moved
        self._detected_at: deque[float] = deque(maxlen=4096)  # monotonic times of detector runs
        self.history: deque[tuple[float, int | None]] = deque(maxlen=5000)  # None: unknown
        self.source_name = ""
        self.source_state = ""
        self.source_reason = ""
        self.geometry = scene_geometry(config)
        # Every configured line and zone is shown from the start: totals 0, zones unknown
        # until the first frame says how many are inside.
        self.lines: dict[str, LineTotals] = {name: LineTotals(name) for name in config.scene.lines}
        self.zones: dict[str, ZoneState] = {
            name: ZoneState(
                name, None, dwell_s=spec.dwell if spec.dwell is not None else config.scene.dwell
            )
            for name, spec in config.scene.zones.items()
        }
        self.tracks: tuple[Track, ...] = ()  # the last frame's, while the count is known
        self.frame_size: tuple[int, int] | None = None  # width, height of the last frame
        self.state_changes = changes  # the device's: one version for everything shown
        self.frame_changes = Changes()  # this camera's frames (its MJPEG readers wait on it)
        self._display: DisplayFrame | None = None
        self._frame_seq = 0
        self._jpeg: tuple[int, bytes] | None = None
        self._jpeg_lock = threading.Lock()

    # ----------------------------------------------------------------- feeding

    def write(self, event: Event) -> bool:
        """Take what the page shows of one of its events (the count's history, a scene
        edit, the source's state); whether anything shown changed."""
        if isinstance(event, CountChanged):
            if event.count is not None:
                self.count_changes += 1
            # An unknown count is a gap in the chart from here.
            self.history.append((event.t, event.count))
            self.trim_history(event.t)
        elif isinstance(event, SceneChanged):
            self._edited(event)
        elif isinstance(event, SourceStateEvent):
            self.source_name = strip_credentials(event.source)
            self.source_state = event.state
            self.source_reason = strip_credentials(event.reason)
        else:
            return False
        return True

    def _edited(self, event: SceneChanged) -> None:
        """The lines and zones were edited: a renamed one keeps what it had, a moved or
        new one starts afresh (perception's next percept says the same)."""
        self.geometry = SceneGeometry.edited(event)
        lines: dict[str, LineTotals] = {}
        for name in event.lines:
            was, kept = event.before("line", name)
            old = self.lines.get(was) if kept else None
            lines[name] = replace(old, name=name) if old else LineTotals(name)
        zones: dict[str, ZoneState] = {}
        for name, zone in event.zones.items():
            was, kept = event.before("zone", name)
            state = self.zones.get(was) if kept else None
            dwell = float(zone["dwell"])
            if state is None:
                zones[name] = ZoneState(name, None, dwell_s=dwell)
            else:
                zones[name] = replace(state, name=name, dwell_s=dwell)
        self.lines, self.zones = lines, zones

    def on_percept(self, percept: Perceived) -> None:
        """The count and what goes with it; latency and (unless private) the boxed frame."""
        if isinstance(percept, CountUnknown):
            self._unknown(percept.reason)
            return
        self.count = percept.count
        self.raw = percept.raw if percept.error is None else None
        self.gated = percept.gated
        self.motion = percept.motion
        if percept.error is None and not percept.gated:
            # A gated frame had no detector run: its 0 ms is not a latency.
            self.detect_ms = percept.detect_ms
            self._latency.observe(percept.detect_ms / 1000.0)
            self._detected_at.append(self._monotonic())
        # The percept's numbers are perception's own after this frame: they win over
        # what the events said (the same numbers, a moment earlier).
        self.lines = dict(percept.lines)
        self.zones = dict(percept.zones)
        self.tracks = percept.tracks
        height, width = percept.frame.image.shape[:2]
        self.frame_size = (int(width), int(height))
        if not self.privacy:
            self._frame_seq += 1
            self._display = DisplayFrame.of(
                percept, self._frame_seq, self.geometry, self._monotonic()
            )
            self.frame_changes.bump()

    def _unknown(self, reason: str) -> None:
        # Nothing stale stays on show: the last frame's number goes with the count.
        self.count = None
        self.count_reason = reason
        self.raw = None
        self.tracks = ()
        # Zones are unknown with the count; line totals stay: they are what was counted.
        self.zones = {name: _unknown_zone(z) for name, z in self.zones.items()}

    def trim_history(self, now: float) -> None:
        # Keep one point older than the window: it is the count at the window's start.
        while len(self.history) > 1 and self.history[1][0] < now - self.history_s:
            self.history.popleft()

    # ----------------------------------------------------------------- reading

    def detections_per_s(self) -> float:
        """Detector runs per second over the last ``RATE_WINDOW_S`` (a still scene: ~0)."""
        since = self._monotonic() - RATE_WINDOW_S
        while self._detected_at and self._detected_at[0] < since:
            self._detected_at.popleft()
        return len(self._detected_at) / RATE_WINDOW_S

    def health(self) -> Health:
        """Whether it counts, and if not, why (its source, or its count unknown)."""
        state = self.camera.source_runner.state
        if state is not SourceState.RUNNING:
            reason = f" ({self.source_reason})" if self.source_reason else ""
            return Health(False, f"source {state.value}{reason}", summary=f"source {state.value}")
        if self.count is None:
            return Health(False, f"count unknown: {self.count_reason}", summary="count unknown")
        return OK

    @property
    def frame_seq(self) -> int:
        """Sequence number of the frame shown now (0: none yet, and always in privacy mode)."""
        return 0 if self._display is None else self._display.seq

    def json(self) -> dict[str, Any]:
        """Everything the page shows of this camera, as plain JSON types (the caller
        trimmed the history to the session's time)."""
        camera = self.camera
        counting = self.count is not None
        return {
            "count": self.count,
            "count_reason": None if counting else self.count_reason,
            "raw": self.raw,
            "count_changes": self.count_changes,
            "detect_ms": None if self.detect_ms is None else round(self.detect_ms, 1),
            "perception": self.perception_json(),
            "history": [[round(t, 2), c] for t, c in self.history],
            "source": {
                "name": self.source_name,
                "state": self.source_state or camera.source_runner.state.value,
                "reason": self.source_reason,
                # The camera's frame rate and, when it was asked for fewer, what it gave.
                "fps": camera.source_fps,
                "fps_note": camera.source_fps_note,
            },
            "frame_seq": self.frame_seq,
            "frame_size": list(self.frame_size) if self.frame_size else None,
            "lines": lines_json(self.lines, self.geometry, counting=counting),
            "zones": zones_json(self.zones, self.geometry, counting=counting),
            "tracks": [track_json(t) for t in self.tracks] if counting else [],
            "privacy": self.privacy,
            "health": self.health().json(),
        }

    def perception_json(self) -> dict[str, Any]:
        """What the detector costs now and whether it keeps up: its rate, the frames the
        motion gate held, the detections a second asked for and got."""
        camera = self.camera
        decode = camera.decode_ms
        achieved = camera.achieved_fps
        return {
            "motion_gate": camera.config.perception.motion == "on",
            "gated": self.gated,
            "motion": None if self.motion is None else round(self.motion, 4),
            "detections_per_s": round(self.detections_per_s(), 2),
            "frames_detected": camera.perception.stats.detected,
            "frames_gated": camera.perception.stats.gated,
            "decode_ms": None if decode is None else round(decode, 2),
            "detect_fps": round(camera.detect_fps, 2),
            "achieved_fps": None if achieved is None else round(achieved, 2),
            "behind": camera.behind,
        }

    def snapshot_jpeg(self) -> tuple[int, bytes] | None:
        """(frame seq, JPEG) of the newest frame with its boxes; blocking, call off the loop."""
        if self.privacy:
            return None
        display = self._display  # one read: the loop may swap it meanwhile
        if display is None:
            return None
        with self._jpeg_lock:
            if self._jpeg is not None and self._jpeg[0] == display.seq:
                return self._jpeg
        data = render_jpeg(display)
        with self._jpeg_lock:
            if self._jpeg is None or self._jpeg[0] < display.seq:
                self._jpeg = (display.seq, data)
        return display.seq, data


__all__ = ["RATE_WINDOW_S", "CameraState", "scene_geometry"]
