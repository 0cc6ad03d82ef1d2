"""What the device is doing right now, for people (status page) and machines (Prometheus).

``Telemetry`` is fed three ways, all on the event loop: as an event sink (count
changes, source and model-connection states, model text, stream starts/stops),
as a ``count_people`` observer (each detector result: boxes, raw count,
latency) and as a capture observer (each encoded frame). It keeps only the
current state, a short count history and references to the newest frame;
drawing and JPEG encoding happen later, on demand, in a worker thread
(``snapshot_jpeg``), so feeding it costs the pipeline next to nothing.

Counters that the app already keeps (frames, emissions, reconnects, tokens) are
read at scrape time instead of being mirrored, so the two can never disagree.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import numpy as np
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from device.capture import CaptureStats, EncodedFrame
from device.config import Config
from device.events import SourceStateEvent
from device.source_runner import SourceState
from live.clock import Clock
from live.events import ConnectionState, Event, ModelText, StreamStarted, StreamStopped, Transcript
from live.session import SessionStats
from tools.count_people import CountChanged, CountStats, FrameResult

DETECT_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5)
DROP_REASONS = ("rate", "late", "encode_error")
SOURCE_STATES = tuple(state.value for state in SourceState)
CONNECTION_STATES = ("connecting", "connected", "disconnected", "reconnecting", "failed", "closed")

_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


def strip_credentials(text: str) -> str:
    """``rtsp://user:pass@cam/stream`` -> ``rtsp://***@cam/stream``.

    Camera URLs carry passwords more often than not, and the source name is shown
    on the status page and published over MQTT.
    """
    return _URL_CREDENTIALS.sub("***@", text)


# ---------------------------------------------------------------- app protocols
# Read-only views of the App: what telemetry and the status server need, and no
# more, so tests can drive them with small fakes.


class SessionView(Protocol):
    @property
    def stats(self) -> SessionStats: ...

    @property
    def connection_state(self) -> str: ...

    @property
    def started_at(self) -> float: ...

    def running_streams(self) -> list[dict[str, Any]]: ...

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]: ...


class CaptureView(Protocol):
    @property
    def stats(self) -> CaptureStats: ...


class SourceRunnerView(Protocol):
    @property
    def state(self) -> SourceState: ...


class CounterView(Protocol):
    @property
    def stats(self) -> CountStats: ...


class AppView(Protocol):
    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def session(self) -> SessionView | None: ...

    @property
    def capture(self) -> CaptureView: ...

    @property
    def source_runner(self) -> SourceRunnerView: ...

    @property
    def counter(self) -> CounterView: ...


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


# ----------------------------------------------------------------- change feed


class Changes:
    """A version number that waiters can block on; bumped from the event loop only."""

    def __init__(self) -> None:
        self.version = 0
        self._event: anyio.Event | None = None  # made on first wait: needs a running loop

    def bump(self) -> None:
        self.version += 1
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self, seen: int) -> int:
        """Return the current version once it differs from ``seen``."""
        while self.version == seen:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
        return self.version


# ---------------------------------------------------------------------- frames


@dataclass(frozen=True)
class DisplayFrame:
    """The frame the status page shows: a detector frame with its boxes, or a plain one."""

    seq: int
    image: np.ndarray  # BGR, never modified (the pipeline may still hold it)
    boxes: np.ndarray  # (N, 4) x1, y1, x2, y2 in image pixels; empty for a plain frame
    scores: np.ndarray
    count: int | None
    detected: bool
    at: float  # telemetry's monotonic time of arrival


BOX_COLOR = (60, 200, 60)  # BGR


def render_jpeg(frame: DisplayFrame, quality: int = 80) -> bytes:
    """The frame with its boxes and count drawn on a copy, as JPEG (call off the loop)."""
    import cv2

    image = frame.image.copy()
    height, width = image.shape[:2]
    thickness = max(1, round(max(height, width) / 400))
    for box, score in zip(frame.boxes, frame.scores, strict=True):
        x1, y1, x2, y2 = (round(float(v)) for v in box)
        cv2.rectangle(image, (x1, y1), (x2, y2), BOX_COLOR, thickness)
        label = f"{float(score):.2f}"
        cv2.putText(
            image, label, (x1 + 2, max(12, y1 - 4)), cv2.FONT_HERSHEY_SIMPLEX, 0.4, BOX_COLOR, 1
        )
    if frame.detected:
        people = "-" if frame.count is None else str(frame.count)
        text = f"people: {people}  boxes: {len(frame.boxes)}"
        cv2.rectangle(image, (0, 0), (min(width, 8 + 9 * len(text)), 22), (0, 0, 0), -1)
        cv2.putText(
            image, text, (6, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA
        )
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return bytes(data.tobytes())


# ------------------------------------------------------------------- telemetry


@dataclass(frozen=True)
class Health:
    ok: bool
    reason: str


class Telemetry:
    """Current state of one app, its count history and its Prometheus metrics."""

    def __init__(
        self,
        app: AppView,
        *,
        history_s: float = 600.0,
        texts: int = 8,
        stale_frame_s: float = 2.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.privacy = app.config.privacy
        self.history_s = history_s
        self.stale_frame_s = stale_frame_s
        self._monotonic = monotonic
        self.count: int | None = None
        self.raw: int | None = None
        self.count_changes = 0
        self.detect_ms: float | None = None
        self.history: deque[tuple[float, int]] = deque(maxlen=5000)
        self.source_name = ""
        self.source_state = ""
        self.source_reason = ""
        self.connection_state = ""
        self.connection_reason = ""
        self.model_text: deque[dict[str, Any]] = deque(maxlen=texts)
        self.state_changes = Changes()
        self.frame_changes = Changes()
        self.mqtt: PublisherStats | None = None
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
        self.registry.register(_AppCollector(self))

    # ----------------------------------------------------------------- feeding

    def write(self, event: Event) -> None:
        """EventSink: take what the page and the metrics show from the event stream."""
        if isinstance(event, CountChanged):
            self.count = event.count
            self.count_changes += 1
            self.history.append((event.t, event.count))
            self._trim_history(event.t)
        elif isinstance(event, SourceStateEvent):
            self.source_name = strip_credentials(event.source)
            self.source_state = event.state
            self.source_reason = strip_credentials(event.reason)
        elif isinstance(event, ConnectionState):
            self.connection_state = event.state
            self.connection_reason = event.reason
        elif isinstance(event, ModelText) or (
            isinstance(event, Transcript) and event.direction == "output"
        ):
            self.model_text.append({"t": round(event.t, 2), "text": event.text})
        elif not isinstance(event, StreamStarted | StreamStopped):
            return  # nothing shown depends on it
        self.state_changes.bump()

    def close(self) -> None:
        """EventSink: nothing to release."""

    def on_frame_result(self, result: FrameResult) -> None:
        """count_people observer: latency, raw count and (unless private) the boxed frame."""
        self.detect_ms = result.detect_ms
        self.detect_latency.observe(result.detect_ms / 1000.0)
        self.raw = result.raw
        if not self.privacy and result.frame is not None:
            self._show(
                result.frame,
                np.asarray(result.detections.boxes, dtype=np.float32),
                np.asarray(result.detections.scores, dtype=np.float32),
                count=result.count,
                detected=True,
            )
        self.state_changes.bump()

    def on_encoded_frame(self, frame: EncodedFrame) -> None:
        """Capture observer: a plain frame is shown only while no detector frame is fresh."""
        if self.privacy:
            return
        current = self._display
        now = self._monotonic()
        if current is not None and current.detected and now - current.at < self.stale_frame_s:
            return
        empty = np.zeros((0, 4), np.float32)
        self._show(frame.image, empty, np.zeros((0,), np.float32), count=self.count, detected=False)

    def _show(
        self,
        image: np.ndarray,
        boxes: np.ndarray,
        scores: np.ndarray,
        *,
        count: int | None,
        detected: bool,
    ) -> None:
        self._frame_seq += 1
        self._display = DisplayFrame(
            self._frame_seq, image, boxes, scores, count, detected, self._monotonic()
        )
        self.frame_changes.bump()

    def _trim_history(self, now: float) -> None:
        # Keep one point older than the window: it is the count at the window's start.
        while len(self.history) > 1 and self.history[1][0] < now - self.history_s:
            self.history.popleft()

    # ----------------------------------------------------------------- reading

    def session_time(self) -> float:
        session = self.app.session
        if session is None:
            return 0.0
        return max(0.0, self.app.clock.now() - session.started_at)

    def health(self) -> Health:
        session = self.app.session
        if session is None:
            return Health(False, "session not started")
        state = self.app.source_runner.state
        if state is not SourceState.RUNNING:
            reason = f" ({self.source_reason})" if self.source_reason else ""
            return Health(False, f"source {state.value}{reason}")
        if session.connection_state != "connected":
            reason = f" ({self.connection_reason})" if self.connection_reason else ""
            return Health(False, f"model connection {session.connection_state}{reason}")
        return Health(True, "ok")

    def running_streams(self) -> list[dict[str, Any]]:
        session = self.app.session
        if session is None:
            return []
        keep = ("id", "name", "running_s", "emissions", "frames_received", "frames_dropped")
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
        session = self.app.session
        connection = self.connection_state or (session.connection_state if session else "")
        source_state = self.source_state or self.app.source_runner.state.value
        data: dict[str, Any] = {
            "device_id": self.app.config.device_id,
            "model": self.app.config.model_name(),
            "privacy": self.privacy,
            "t": round(now, 2),
            "count": self.count,
            "raw": self.raw,
            "count_changes": self.count_changes,
            "detect_ms": None if self.detect_ms is None else round(self.detect_ms, 1),
            "history": [[round(t, 2), c] for t, c in self.history],
            "history_s": self.history_s,
            "source": {
                "name": self.source_name,
                "state": source_state,
                "reason": self.source_reason,
            },
            "connection": {"state": connection, "reason": self.connection_reason},
            "streams": self.running_streams(),
            "model_text": list(self.model_text),
            "frame_seq": self.frame_seq,
            "health": {"ok": health.ok, "reason": health.reason},
        }
        if self.mqtt is not None:
            data["mqtt"] = {"connected": self.mqtt.connected, "queued": self.mqtt.queued}
        return data

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


class _AppCollector(Collector):
    """Reads the app's own counters at scrape time."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def collect(self) -> Iterable[Metric]:
        tel = self.telemetry
        app = tel.app
        capture = app.capture.stats
        counter = app.counter.stats
        session = app.session
        stats = session.stats if session is not None else SessionStats()
        counters = (
            ("lookout_frames_read", "Frames read from the source", capture.frames_read),
            ("lookout_frames_sampled", "Frames kept by the sampler", capture.frames_sampled),
            ("lookout_frames_encoded", "Frames resized and JPEG-encoded", capture.frames_encoded),
            ("lookout_frames_detected", "Frames the detector ran on", counter.processed),
            ("lookout_detector_errors", "Detector failures", counter.detector_errors),
            ("lookout_frames_corrupt", "Frames count_people could not use", counter.corrupt),
            ("lookout_count_changes", "Changes of the people count", tel.count_changes),
            ("lookout_emissions", "Streaming tool emissions sent to the model", stats.emissions),
            ("lookout_tool_calls", "Tool calls made by the model", stats.tool_calls),
            ("lookout_model_reconnects", "Reconnects to the live model", stats.reconnects),
            ("lookout_frames_to_model", "Frames sent to the live model", stats.frames_to_model),
            ("lookout_events_dropped", "Events a slow reader missed", stats.events_dropped),
        )
        for name, documentation, value in counters:
            yield CounterMetricFamily(name, documentation, value=value)
        dropped = CounterMetricFamily(
            "lookout_frames_dropped", "Frames dropped, by reason", labels=["reason"]
        )
        reasons = dict.fromkeys(DROP_REASONS, 0) | dict(capture.dropped)
        reasons["model_lane"] = stats.frames_model_lane_dropped
        for reason, value in sorted(reasons.items()):
            dropped.add_metric([reason], value)
        yield dropped
        tokens = CounterMetricFamily(
            "lookout_model_tokens", "Token usage reported by the model", labels=["kind"]
        )
        tokens.add_metric(["prompt"], stats.usage_prompt_tokens)
        tokens.add_metric(["response"], stats.usage_response_tokens)
        tokens.add_metric(["total"], stats.usage_total_tokens)
        yield tokens
        gauges: list[tuple[str, str, float | None]] = [
            ("lookout_people", "People in view (smoothed count)", tel.count),
            ("lookout_people_raw", "People the detector saw in the last frame", tel.raw),
            ("lookout_running_streams", "Streaming calls running now", len(tel.running_streams())),
            ("lookout_healthy", "1 when /healthz answers 200", float(tel.health().ok)),
            ("lookout_session_seconds", "Seconds since the session started", tel.session_time()),
        ]
        if tel.mqtt is not None:
            gauges.append(
                ("lookout_mqtt_connected", "1 while connected", float(tel.mqtt.connected))
            )
            gauges.append(("lookout_mqtt_queued", "MQTT messages not yet acked", tel.mqtt.queued))
        for name, documentation, gauge in gauges:
            if gauge is not None:  # an unknown count is left out, not reported as 0
                yield GaugeMetricFamily(name, documentation, value=gauge)
        if tel.mqtt is not None:
            yield CounterMetricFamily(
                "lookout_mqtt_published", "MQTT messages acknowledged", value=tel.mqtt.published
            )
            yield CounterMetricFamily(
                "lookout_mqtt_dropped", "MQTT messages dropped (queue full)", value=tel.mqtt.dropped
            )
        yield _one_hot(
            "lookout_source_state",
            "Frame source state (1 for the current one)",
            SOURCE_STATES,
            app.source_runner.state.value,
        )
        yield _one_hot(
            "lookout_model_connection_state",
            "Live model connection state (1 for the current one)",
            CONNECTION_STATES,
            session.connection_state if session is not None else "connecting",
        )
        info = GaugeMetricFamily(
            "lookout_info", "Device and model of this process", labels=["device_id", "model"]
        )
        info.add_metric([app.config.device_id, app.config.model_name()], 1.0)
        yield info


def _one_hot(name: str, documentation: str, states: Iterable[str], current: str) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=["state"])
    for state in states:
        family.add_metric([state], 1.0 if state == current else 0.0)
    return family
