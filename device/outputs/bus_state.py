"""What the device is doing right now, as its bus says it: the state the views are made of.

``BusState`` subscribes to the device's bus: events (count changes, source
and model states, model text, streams) set the state, and each percept gives
the latest frame with its boxes, the raw count, the detector latency, the
tracks and the configured lines' totals and zones' states. It keeps only the
current state, a short count history and a reference to the newest frame, so
feeding it costs the pipeline next to nothing. The events about lines and zones
(crossings, zone counts) keep them current too, and an unknown count makes every
zone unknown with it. The views of this state (the page's JSON, health, the
snapshot) are ``telemetry.py``'s, the Prometheus one ``metrics.py``'s.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Histogram

from device.config import Config
from device.events import (
    CountChanged,
    LineCrossed,
    RunStarted,
    SceneChanged,
    SnapshotSaved,
    SourceStateEvent,
    ZoneCount,
)
from device.outputs.changes import Changes
from device.outputs.pictures import LatestPictures
from device.outputs.render import DisplayFrame, SceneGeometry
from device.outputs.transcripts import TranscriptLines
from device.outputs.view import DeviceView
from device.percept import LineTotals, Percept, Track, ZoneState
from live.events import (
    ConnectionState,
    Event,
    Interrupted,
    ModelText,
    StreamStarted,
    StreamStopped,
    Transcript,
    TurnComplete,
)
from live.redact import strip_credentials

DETECT_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)


def scene_geometry(config: Config) -> SceneGeometry:
    """The configured lines and zones, where the page draws them."""
    return SceneGeometry(
        lines={name: spec.points for name, spec in config.scene.lines.items()},
        zones={name: spec.points for name, spec in config.scene.zones.items()},
    )


def _unknown_zone(state: ZoneState) -> ZoneState:
    return ZoneState(state.name, None, dwell_s=state.dwell_s)


class BusState:
    """Current state of one device, its count history, and the frame to show."""

    def __init__(
        self,
        device: DeviceView,
        *,
        history_s: float = 600.0,
        texts: int = 8,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.device = device
        self.privacy = device.config.device.privacy
        self._transcripts = TranscriptLines()
        self.history_s = history_s
        self._monotonic = monotonic
        self._wall = wall
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
        self.connection_state = ""
        self.connection_reason = ""
        self.connection_since: float | None = None  # wall clock of the last state change
        self.model_text: deque[dict[str, Any]] = deque(maxlen=texts)
        config = device.config
        # The latest pictured events (--snapshots; never under privacy: none are written).
        self.pictures_on = config.outputs.snapshots is not None and not self.privacy
        self.pictures = LatestPictures(wall=wall)
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
        self.state_changes = Changes()
        self.frame_changes = Changes()
        self._display: DisplayFrame | None = None
        self._frame_seq = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.detect_latency = Histogram(
            "lookout_detector_latency_seconds",
            "Person detector inference time per frame",
            buckets=DETECT_BUCKETS_S,
            registry=self.registry,
        )

    # ----------------------------------------------------------------- feeding

    def write(self, event: Event) -> None:
        """Bus subscriber: take what the page and the metrics show from the events."""
        if isinstance(event, CountChanged):
            self.count = event.count
            if event.count is not None:
                self.count_changes += 1
                self.history.append((event.t, event.count))
                self._trim_history(event.t)
            else:
                # Nothing stale stays on show: the last frame's number goes with the count,
                # and the chart has a gap from here.
                self.count_reason = event.reason or "unknown"
                self.raw = None
                self.tracks = ()
                # Zones are unknown with the count (perception also says so per zone);
                # line totals stay: they are what was counted so far.
                self.zones = {name: _unknown_zone(z) for name, z in self.zones.items()}
                self.history.append((event.t, None))
                self._trim_history(event.t)
        elif isinstance(event, LineCrossed):
            last: Literal["in", "out"] = "in" if event.direction == "in" else "out"
            self.lines[event.line] = LineTotals(event.line, event.total_in, event.total_out, last)
        elif isinstance(event, ZoneCount):
            zone = self.zones.get(event.zone, ZoneState(event.zone, None))
            if event.people is None:
                self.zones[event.zone] = _unknown_zone(zone)
            else:
                self.zones[event.zone] = ZoneState(
                    event.zone,
                    event.people,
                    event.dwelling,
                    event.longest_s,
                    dwell_s=zone.dwell_s,
                )
        elif isinstance(event, SceneChanged):
            self._edited(event)
        elif isinstance(event, SourceStateEvent):
            self.source_name = strip_credentials(event.source)
            self.source_state = event.state
            self.source_reason = strip_credentials(event.reason)
        elif isinstance(event, ConnectionState):
            if event.state != self.connection_state:
                self.connection_since = self._wall()
            self.connection_state = event.state
            self.connection_reason = event.reason
        elif isinstance(event, SnapshotSaved | RunStarted):
            if not self.pictures_on or not self.pictures.take(event):
                return
        elif isinstance(event, ModelText):
            self.model_text.append({"t": round(event.t, 2), "text": event.text})
        elif isinstance(event, Transcript | TurnComplete | Interrupted):
            # Said aloud and heard, a line per sentence, beside what the model wrote.
            lines = self._transcripts.lines(event)
            for direction, text in lines:
                shown = text if direction == "output" else f"heard: {text}"
                self.model_text.append({"t": round(event.t, 2), "text": shown})
            if not lines:
                return
        elif not isinstance(event, StreamStarted | StreamStopped):
            return  # nothing shown depends on it
        self.state_changes.bump()

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

    def close(self) -> None:
        """Bus subscriber: nothing to release."""

    def on_percept(self, percept: Percept) -> None:
        """Bus percept subscriber: latency, raw count and (unless private) the boxed frame."""
        self.raw = percept.raw if percept.error is None else None
        self.gated = percept.gated
        self.motion = percept.motion
        if percept.error is None and not percept.gated:
            # A gated frame had no detector run: its 0 ms is not a latency.
            self.detect_ms = percept.detect_ms
            self.detect_latency.observe(percept.detect_ms / 1000.0)
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
        self.state_changes.bump()

    def _trim_history(self, now: float) -> None:
        # Keep one point older than the window: it is the count at the window's start.
        while len(self.history) > 1 and self.history[1][0] < now - self.history_s:
            self.history.popleft()


__all__ = ["BusState", "scene_geometry"]
