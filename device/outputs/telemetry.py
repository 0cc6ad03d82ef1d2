"""What the device is doing right now, for the status page, ``/healthz`` and ``/metrics``.

``Telemetry`` is the bus-fed state (``bus_state.py``) and the views made of it:
the page's JSON (``state``), health (``health``, for ``/healthz`` and the page)
and the snapshot (``snapshot_jpeg``: drawn and JPEG-encoded on demand, in a
worker thread). Each view is made from the same fields, on the event loop, so a
view never mixes two moments. The Prometheus view of the same state is
``device/outputs/metrics.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import generate_latest

from device.feeds.runner import SourceState
from device.outputs.bus_state import BusState
from device.outputs.rate import PacingStats
from device.outputs.render import render_jpeg
from device.outputs.scene_json import lines_json, track_json, zones_json
from device.outputs.view import DeviceView

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
    paced: PacingStats


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


class Telemetry(BusState):
    """One device's state and its views: the page's JSON, health, the snapshot."""

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
        super().__init__(device, history_s=history_s, texts=texts, monotonic=monotonic, wall=wall)
        self.mqtt = mqtt  # the MQTT publisher's counts (None: no MQTT)
        self.http = http  # the status server's connection counts (None: not shown)
        self._jpeg: tuple[int, bytes] | None = None
        self._jpeg_lock = threading.Lock()
        from device.outputs.metrics import AppCollector  # the collector reads this object

        self.registry.register(AppCollector(self))

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


__all__ = ["Health", "Telemetry"]
