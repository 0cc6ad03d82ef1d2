"""What the device is doing right now, for the status page, ``/healthz`` and ``/metrics``.

``Telemetry`` subscribes to the device's bus. Each camera's events and percepts
(``camera`` names it) go to that camera's state (``camera_state.py``: its count,
lines, zones, frame); what is the device's (the model's connection and text, the
streams, the pictures, MQTT and the server's counts) is kept here. Its views are
the page's JSON (``state``: the first camera's at the top level, as a device of one
camera always had it, and every camera's under ``cameras``), health (``health``,
for ``/healthz`` and the page) and each camera's snapshot. Each view is made from
the same fields, on the event loop, so a view never mixes two moments. The
Prometheus view of the same state is ``device/outputs/page/metrics.py``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from device.config.values import shown
from device.events import CameraEvent, RunStarted, SnapshotSaved
from device.outputs.camera_state import CameraState
from device.outputs.changes import Changes
from device.outputs.health import Health, cameras_health, combined
from device.outputs.page.rate import PacingStats
from device.outputs.pictures.latest import LatestPictures
from device.outputs.transcripts import TranscriptLines
from device.outputs.view import DeviceView
from device.vision.percept import Perceived
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

DETECT_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)
# What /api/state holds of each camera, and at its top level of the first camera's.
CAMERA_KEYS = (
    "count", "count_reason", "raw", "count_changes", "detect_ms", "perception",
    "history", "source", "frame_seq", "frame_size", "lines", "zones", "tracks",
)  # fmt: skip


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
    paced: PacingStats


def _iso(wall: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(wall))


class Telemetry:
    """One device's state, by camera and its own, and its views."""

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
        self.mqtt = mqtt  # the MQTT publisher's counts (None: no MQTT)
        self.http = http  # the status server's connection counts (None: not shown)
        self.history_s = history_s
        self._wall = wall
        self.state_changes = Changes()
        self.registry = CollectorRegistry(auto_describe=False)
        latency = Histogram(
            "lookout_detector_latency_seconds",
            "Person detector inference time per frame",
            labelnames=["camera"],
            buckets=DETECT_BUCKETS_S,
            registry=self.registry,
        )
        self.cameras: dict[str, CameraState] = {
            name: CameraState(
                camera,
                self.state_changes,
                latency.labels(camera=name),
                history_s=history_s,
                monotonic=monotonic,
            )
            for name, camera in device.cameras.items()
        }
        self.first = next(iter(self.cameras.values()))
        self.connection_state = ""
        self.connection_reason = ""
        self.connection_since: float | None = None  # wall clock of the last state change
        self.model_text: deque[dict[str, Any]] = deque(maxlen=texts)
        self._transcripts = TranscriptLines()
        config = device.config
        # The latest pictured events (--snapshots; never under privacy: none are written).
        self.pictures_on = config.outputs.snapshots is not None and not config.device.privacy
        self.pictures = LatestPictures(wall=wall)
        from device.outputs.page.metrics import AppCollector  # the collector reads this object

        self.registry.register(AppCollector(self))

    def camera(self, name: str | None = None) -> CameraState | None:
        """A camera's state by name (None: the first camera's); None: no such camera."""
        return self.first if name is None else self.cameras.get(name)

    def showing(self, name: str | None) -> CameraState:
        """The camera whose images are asked for (None: the first); LookupError with one
        line when there is no such camera or it is private."""
        camera = self.camera(name)
        if camera is None:
            names = ", ".join(self.cameras)
            raise LookupError(f"no camera named {shown(name)} (cameras: {names})")
        if camera.privacy:
            raise LookupError("privacy mode: no images are served")
        return camera

    # The first camera's, as a device of one camera always had them.

    @property
    def count(self) -> int | None:
        return self.first.count

    @property
    def raw(self) -> int | None:
        return self.first.raw

    @property
    def detect_ms(self) -> float | None:
        return self.first.detect_ms

    @property
    def frame_seq(self) -> int:
        return self.first.frame_seq

    def snapshot_jpeg(self) -> tuple[int, bytes] | None:
        return self.first.snapshot_jpeg()

    # ----------------------------------------------------------------- feeding

    def write(self, event: Event) -> None:
        """Bus subscriber: take what the page and the metrics show from the events."""
        if isinstance(event, SnapshotSaved | RunStarted):
            if not self.pictures_on or not self.pictures.take(event):
                return
        elif isinstance(event, CameraEvent):
            camera = self.cameras.get(event.camera)
            if camera is None or not camera.write(event):
                return
        elif isinstance(event, ConnectionState):
            if event.state != self.connection_state:
                self.connection_since = self._wall()
            self.connection_state = event.state
            self.connection_reason = event.reason
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

    def close(self) -> None:
        """Bus subscriber: nothing to release."""

    def on_percept(self, percept: Perceived) -> None:
        """Bus percept subscriber: the percept's camera takes it."""
        camera = self.cameras.get(percept.camera)
        if camera is not None:
            camera.on_percept(percept)
            self.state_changes.bump()

    # ----------------------------------------------------------------- reading

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
        """Counting is what makes a device healthy: every camera counting, ok; some,
        degraded; none, unhealthy. A missing model only degrades it."""
        session = self.device.session
        if session is None:
            return Health(False, "starting", summary="starting")
        down, off = cameras_health([(name, c.health()) for name, c in self.cameras.items()])
        if down is not None:
            return down
        reasons = [h.reason for h in off]
        summaries = [h.summary for h in off]
        if not session.model_connected:
            since = f" since {_iso(self.connection_since)}" if self.connection_since else ""
            reason = f" ({self.connection_reason})" if self.connection_reason else ""
            reasons.append(f"model {self.model_state()}{since}{reason}")
            summaries.append(f"model {self.model_state()}{since}")
        # A log that cannot keep up does not stop the counting, but it must be seen.
        problems = self.device.logs.problems()
        if problems:
            reasons.extend(problems)
            summaries.append("event log failing")
        if self.mqtt is not None:
            mqtt_problems = self.mqtt.problems()  # refused, another device with this id, drops
            if mqtt_problems:
                reasons.extend(mqtt_problems)
                summaries.append("MQTT failing")
        return combined(reasons, summaries)

    def running_streams(self) -> list[dict[str, Any]]:
        session = self.device.session
        if session is None:
            return []
        keep = ("id", "name", "by", "running_s", "emissions", "frames_received", "frames_dropped")
        return [{k: s[k] for k in keep if k in s} for s in session.running_streams()]

    def state(self) -> dict[str, Any]:
        """Everything the status page shows, as plain JSON types: the device's, the first
        camera's at the top level, and every camera's under ``cameras``."""
        now = self.session_time()
        cameras: dict[str, dict[str, Any]] = {}
        for name, camera in self.cameras.items():
            camera.trim_history(now)
            cameras[name] = camera.json()
        first = cameras[self.first.name]
        health = self.health()
        model = {
            "name": self.device.config.model_name(),
            "state": self.model_state(),
            "connected": self.model_connected(),
            "since": _iso(self.connection_since) if self.connection_since else None,
            "reason": self.connection_reason,
        }
        session = self.device.session
        data: dict[str, Any] = {
            "device_id": self.device.config.device.device_id,
            "model": self.device.config.model_name(),
            "privacy": first["privacy"],
            "push_to_talk": self.device.push_to_talk,
            "t": round(now, 2),
            **{key: first[key] for key in CAMERA_KEYS},
            "history_s": self.history_s,
            "connection": {"state": model["state"], "reason": self.connection_reason},
            "model_state": model,
            "streams": self.running_streams(),
            "startable": session.streaming_tools() if session else [],
            "model_text": list(self.model_text),
            "pictures": {"on": self.pictures_on, "latest": self.pictures.json()},
            "health": health.json(),
            # The spending cap (--budget-tokens, --budget-session): None when there is none.
            "budget": self.device.budget,
            "camera_names": list(cameras),
            "cameras": cameras,
        }
        if self.mqtt is not None:
            data["mqtt"] = {"connected": self.mqtt.connected, "queued": self.mqtt.queued}
        return data

    def metrics_text(self) -> bytes:
        return generate_latest(self.registry)


__all__ = ["CAMERA_KEYS", "Health", "Telemetry"]
