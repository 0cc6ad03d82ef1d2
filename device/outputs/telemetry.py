"""What the device is doing right now, for the status page, ``/healthz`` and ``/metrics``.

``Telemetry`` subscribes to the device's bus: events (count changes, source
and model states, model text, streams) set the state, and each percept gives
the latest frame with its boxes, the raw count, the detector latency, the
tracks and the configured lines' totals and zones' states. It keeps only the
current state, a short count history and a reference to the newest frame;
drawing and JPEG encoding happen later, on demand, in a worker thread
(``snapshot_jpeg``), so feeding it costs the pipeline next to nothing. The
events about lines and zones (crossings, zone counts) keep them current too,
and an unknown count makes every zone unknown with it. The Prometheus view
of the same state is ``device/outputs/metrics.py``.

Kept whole: one subscriber's state and the views made of it (the page's
JSON, health, the snapshot); each is made on the event loop from the same
fields, so a view never mixes two moments.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from prometheus_client import CollectorRegistry, Histogram, generate_latest

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
from device.feeds.runner import SourceState
from device.outputs.changes import Changes
from device.outputs.pictures import LatestPictures
from device.outputs.render import DisplayFrame, SceneGeometry, render_jpeg
from device.outputs.scene_json import lines_json, track_json, zones_json
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
RATE_WINDOW_S = 10.0  # detector runs per second are counted over this much time


class PublisherStats(Protocol):
    """What the MQTT publisher reports (kept as a protocol: telemetry must not need it)."""

    @property
    def connected(self) -> bool: ...

    @property
    def published(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    @property
    def queued(self) -> int: ...

    def problems(self) -> list[str]: ...


class ConnectionStats(Protocol):
    """The status server's connection counts (``connection_guard.GuardStats``)."""

    open: int
    refused: int
    timed_out: int


@dataclass(frozen=True)
class Health:
    """``ok``: the device counts (``/healthz`` 200); ``degraded``: it does, but something is off."""

    ok: bool
    reason: str
    degraded: bool = False
    # The reason in states only, for /healthz (open without the token, to any monitor):
    # no source, file name or error text, which may say more than a monitor should know.
    summary: str = ""

    @property
    def status(self) -> str:
        if not self.ok:
            return "unhealthy"
        return "degraded" if self.degraded else "ok"


def _iso(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(wall))


def scene_geometry(config: Config) -> SceneGeometry:
    """The configured lines and zones, where the page draws them."""
    return SceneGeometry(
        lines={name: spec.points for name, spec in config.scene.lines.items()},
        zones={name: spec.points for name, spec in config.scene.zones.items()},
    )


def _unknown_zone(state: ZoneState) -> ZoneState:
    return ZoneState(state.name, None, dwell_s=state.dwell_s)


class Telemetry:
    """Current state of one device, its count history, and the frame to show."""

    def __init__(
        self,
        device: DeviceView,
        *,
        mqtt: PublisherStats | None = None,
        http: ConnectionStats | None = None,
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
        self.mqtt = mqtt  # the MQTT publisher's counts (None: no MQTT)
        self.http = http  # the status server's connection counts (None: not shown)
        self._display: DisplayFrame | None = None
        self._frame_seq = 0
        self._jpeg: tuple[int, bytes] | None = None
        self._jpeg_lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.detect_latency = Histogram(
            "lookout_detector_latency_seconds",
            "Person detector inference time per frame",
            buckets=DETECT_BUCKETS_S,
            registry=self.registry,
        )
        from device.outputs.metrics import AppCollector  # the collector reads this object

        self.registry.register(AppCollector(self))

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

    # ----------------------------------------------------------------- reading

    def detections_per_s(self) -> float:
        """Detector runs per second over the last ``RATE_WINDOW_S`` (a still scene: ~0)."""
        since = self._monotonic() - RATE_WINDOW_S
        while self._detected_at and self._detected_at[0] < since:
            self._detected_at.popleft()
        return len(self._detected_at) / RATE_WINDOW_S

    def decode_ms(self) -> float | None:
        """Mean time to decode a frame that was read (None: not measured by this app)."""
        return self.device.decode_ms

    def session_time(self) -> float:
        session = self.device.session
        if session is None:
            return 0.0
        return max(0.0, self.device.clock.now() - session.started_at)

    def model_state(self) -> str:
        session = self.device.session
        return self.connection_state or (session.connection_state if session else "connecting")

    def model_connected(self) -> bool:
        session = self.device.session
        return session is not None and session.model_connected

    def health(self) -> Health:
        """Counting is what makes a device healthy; a missing model only degrades it."""
        session = self.device.session
        if session is None:
            return Health(False, "starting", summary="starting")
        state = self.device.source_runner.state
        if state is not SourceState.RUNNING:
            reason = f" ({self.source_reason})" if self.source_reason else ""
            return Health(False, f"source {state.value}{reason}", summary=f"source {state.value}")
        if self.count is None:
            return Health(False, f"count unknown: {self.count_reason}", summary="count unknown")
        off: list[str] = []
        summary: list[str] = []
        if not session.model_connected:
            since = f" since {_iso(self.connection_since)}" if self.connection_since else ""
            reason = f" ({self.connection_reason})" if self.connection_reason else ""
            off.append(f"model {self.model_state()}{since}{reason}")
            summary.append(f"model {self.model_state()}{since}")
        # A log that cannot keep up does not stop the counting, but it must be seen.
        problems = self.device.logs.problems()
        if problems:
            off.extend(problems)
            summary.append("event log failing")
        if self.mqtt is not None:
            mqtt_problems = self.mqtt.problems()  # refused, another device with this id, drops
            if mqtt_problems:
                off.extend(mqtt_problems)
                summary.append("MQTT failing")
        if off:
            return Health(True, "; ".join(off), degraded=True, summary="; ".join(summary))
        return Health(True, "ok", summary="ok")

    def running_streams(self) -> list[dict[str, Any]]:
        session = self.device.session
        if session is None:
            return []
        keep = ("id", "name", "by", "running_s", "emissions", "frames_received", "frames_dropped")
        return [{k: s[k] for k in keep if k in s} for s in session.running_streams()]

    @property
    def frame_seq(self) -> int:
        """Sequence number of the frame shown now (0: none yet, and always in privacy mode)."""
        return 0 if self._display is None else self._display.seq

    def state(self) -> dict[str, Any]:
        """Everything the status page shows, as plain JSON types."""
        now = self.session_time()
        self._trim_history(now)
        health = self.health()
        source_state = self.source_state or self.device.source_runner.state.value
        model = {
            "name": self.device.config.model_name(),
            "state": self.model_state(),
            "connected": self.model_connected(),
            "since": _iso(self.connection_since) if self.connection_since else None,
            "reason": self.connection_reason,
        }
        data: dict[str, Any] = {
            "device_id": self.device.config.device.device_id,
            "model": self.device.config.model_name(),
            "privacy": self.privacy,
            "push_to_talk": self.device.push_to_talk,
            "t": round(now, 2),
            "count": self.count,
            "count_reason": None if self.count is not None else self.count_reason,
            "raw": self.raw,
            "count_changes": self.count_changes,
            "detect_ms": None if self.detect_ms is None else round(self.detect_ms, 1),
            "perception": self.perception_state(),
            "history": [[round(t, 2), c] for t, c in self.history],
            "history_s": self.history_s,
            "source": {
                "name": self.source_name,
                "state": source_state,
                "reason": self.source_reason,
                # The camera's frame rate and, when it was asked for fewer, what it gave.
                "fps": self.device.source_fps,
                "fps_note": self.device.source_fps_note,
            },
            "connection": {"state": model["state"], "reason": self.connection_reason},
            "model_state": model,
            "streams": self.running_streams(),
            "startable": self.device.session.streaming_tools() if self.device.session else [],
            "model_text": list(self.model_text),
            "frame_seq": self.frame_seq,
            "frame_size": list(self.frame_size) if self.frame_size else None,
            "lines": self.lines_state(),
            "zones": self.zones_state(),
            "tracks": [track_json(t) for t in self.tracks] if self.count is not None else [],
            "pictures": {"on": self.pictures_on, "latest": self.pictures.json()},
            "health": {"ok": health.ok, "status": health.status, "reason": health.reason},
            # The spending cap (--budget-tokens, --budget-session): None when there is none.
            "budget": self.device.budget,
        }
        if self.mqtt is not None:
            data["mqtt"] = {"connected": self.mqtt.connected, "queued": self.mqtt.queued}
        return data

    def perception_state(self) -> dict[str, Any]:
        """What the detector costs now: its rate, the frames the motion gate held."""
        decode = self.decode_ms()
        return {
            "motion_gate": self.device.config.perception.motion == "on",
            "gated": self.gated,
            "motion": None if self.motion is None else round(self.motion, 4),
            "detections_per_s": round(self.detections_per_s(), 2),
            "frames_detected": self.device.perception.stats.detected,
            "frames_gated": self.device.perception.stats.gated,
            "decode_ms": None if decode is None else round(decode, 2),
        }

    def lines_state(self) -> dict[str, dict[str, Any]]:
        return lines_json(self.lines, self.geometry, counting=self.count is not None)

    def zones_state(self) -> dict[str, dict[str, Any]]:
        return zones_json(self.zones, self.geometry, counting=self.count is not None)

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

    def metrics_text(self) -> bytes:
        return generate_latest(self.registry)


__all__ = ["Health", "Telemetry", "scene_geometry", "strip_credentials"]
