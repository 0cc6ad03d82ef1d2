"""Telemetry: state from bus events, frames from percepts, Prometheus metrics from the app."""

from __future__ import annotations

from collections import Counter

import cv2
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from device.config import Config
from device.events import CountChanged, SourceStateEvent
from device.feeds.runner import SourceState
from device.outputs.page.render import BOX_COLOR
from device.outputs.telemetry import Telemetry
from device.vision.percept import Percept
from live.events import ConnectionState, ModelText, StreamStarted, Transcript, Usage
from live.util.redact import strip_credentials
from tests.ops.support import FakeApp, FakeSession, perceived
from tests.percepts import make_percept


def count(n: int, t: float, previous: int | None = None) -> CountChanged:
    return CountChanged(t=t, count=n, previous=previous, raw=n, t_media=t)


def frame_result(image: np.ndarray, boxes: list[list[float]], n: int, ms: float) -> Percept:
    return make_percept(boxes, count=n, image=image, detect_ms=ms)


def metrics(telemetry: Telemetry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    values = {}
    for family in text_string_to_metric_families(telemetry.metrics_text().decode()):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def test_events_set_state_counts_history_and_model_text() -> None:
    app = FakeApp()
    tel = Telemetry(app, history_s=60)
    tel.write(SourceStateEvent(t=0.1, source="rtsp://admin:hunter2@cam/1", state="running"))
    tel.write(ConnectionState(t=0.2, state="connected"))
    for n, t in [(3, 1.0), (4, 30.0), (2, 100.0)]:
        perceived(tel, count(n, t))
    tel.write(ModelText(t=100.5, text="2 people in view (was 4)."))
    tel.write(Transcript(t=101.0, text="heard", direction="input"))  # the user's words, in
    tel.write(Transcript(t=101.2, text=" you.", direction="input"))  # fragments as Live sends
    tel.write(Usage(t=102, total_tokens=5))  # nothing shown: no change
    app.clock.set(110.0)
    state = tel.state()
    assert state["count"] == 2 and state["count_changes"] == 3
    # Window 60 s at t=110: the 4 from t=30 is kept as the count at the window's start.
    assert state["history"] == [[30.0, 4], [100.0, 2]]
    assert state["source"] == {
        "name": "rtsp://cam/1",
        "state": "running",
        "reason": "",
        "fps": None,  # this app has no capture source to ask
        "fps_note": None,
    }
    assert state["connection"]["state"] == "connected"
    # What the microphone heard is shown beside what the model said.
    assert state["model_text"] == [
        {"t": 100.5, "text": "2 people in view (was 4)."},
        {"t": 101.2, "text": "heard: heard you."},  # one line per sentence
    ]
    assert state["t"] == 110.0 and state["device_id"] == "test-cam" and state["model"] == "local"
    assert tel.state_changes.version == 10  # 3 counts, each an event and a percept; usage: none


def test_detector_frames_are_drawn_with_their_boxes_off_the_loop() -> None:
    tel = Telemetry(FakeApp())
    assert tel.snapshot_jpeg() is None and tel.frame_seq == 0
    image = np.full((120, 160, 3), 90, np.uint8)
    tel.on_percept(frame_result(image, [[20, 30, 80, 100]], n=1, ms=42.0))
    snap = tel.snapshot_jpeg()
    assert snap is not None and snap[0] == tel.frame_seq == 1
    drawn = cv2.imdecode(np.frombuffer(snap[1], np.uint8), cv2.IMREAD_COLOR)
    assert drawn is not None and drawn.shape == image.shape
    # The box's left edge is green in the JPEG; the original frame is untouched.
    edge = drawn[60, 20].astype(int)
    assert abs(edge[1] - BOX_COLOR[1]) < 40 and edge[1] > edge[0] + 60
    assert (image == 90).all()
    assert tel.snapshot_jpeg() == snap  # cached: one encode per frame, whoever asks
    assert tel.raw == 1 and tel.detect_ms == 42.0


def test_every_percept_is_the_frame_shown_and_an_unusable_one_clears_the_raw_count() -> None:
    tel = Telemetry(FakeApp())
    tel.on_percept(frame_result(np.zeros((10, 10, 3), np.uint8), [[1, 1, 4, 8]], n=1, ms=5))
    assert tel.frame_seq == 1 and tel.raw == 1
    tel.on_percept(make_percept(count=1, error="detector failed"))
    assert tel.frame_seq == 2 and tel.raw is None  # no raw count for a frame nobody could read
    assert tel.detect_ms == 5  # the last real latency stands


def test_privacy_mode_keeps_no_image_at_all() -> None:
    tel = Telemetry(FakeApp(config=Config.of(device_id="p", model="local", privacy=True)))
    image = np.zeros((10, 10, 3), np.uint8)
    tel.on_percept(frame_result(image, [[1, 1, 5, 5]], n=1, ms=3))
    assert tel.frame_seq == 0 and tel.snapshot_jpeg() is None
    assert tel.state()["privacy"] is True and tel.raw == 1  # counting still works


def test_metrics_read_the_apps_own_counters() -> None:
    app = FakeApp()
    stats = app.capture.stats
    stats.frames_read, stats.frames_sampled = 100, 20
    stats.dropped = Counter({"rate": 80, "unusable": 1})
    assert app.session is not None
    session = app.session.stats
    session.emissions, session.reconnects, session.frames_model_lane_dropped = 7, 2, 3
    session.usage_prompt_tokens, session.usage_total_tokens = 120, 150
    session.outbox_dropped = 6
    app.perception.stats.detected = 19
    tel = Telemetry(app)
    tel.write(count(4, 1.0))  # the history; the percepts below hold the count
    for ms in (30.0, 60.0, 200.0):
        tel.on_percept(frame_result(np.zeros((8, 8, 3), np.uint8), [], n=4, ms=ms))
    values = metrics(tel)
    # A camera's series are labelled with it: main, on a device that names none.
    main = (("camera", "main"),)
    assert values[("lookout_frames_read_total", main)] == 100
    assert values[("lookout_frames_sampled_total", main)] == 20
    assert values[("lookout_frames_dropped_total", (*main, ("reason", "rate")))] == 80
    assert values[("lookout_frames_dropped_total", (*main, ("reason", "unusable")))] == 1
    assert values[("lookout_frames_detected_total", main)] == 19
    assert values[("lookout_frames_dropped_total", (*main, ("reason", "late")))] == 0
    # The model lane's drops are the device's: no camera (an empty label is none).
    assert values[("lookout_frames_dropped_total", (("camera", ""), ("reason", "model_lane")))] == 3
    assert values[("lookout_people", main)] == 4
    assert values[("lookout_emissions_total", ())] == 7
    assert values[("lookout_model_reconnects_total", ())] == 2
    assert values[("lookout_outbox_dropped_total", ())] == 6
    assert values[("lookout_model_tokens_total", (("kind", "prompt"),))] == 120
    assert values[("lookout_model_tokens_total", (("kind", "total"),))] == 150
    assert values[("lookout_detector_latency_seconds_count", main)] == 3
    assert values[("lookout_detector_latency_seconds_bucket", (*main, ("le", "0.1")))] == 2
    assert values[("lookout_detector_latency_seconds_sum", main)] == pytest.approx(0.29)
    assert values[("lookout_source_state", (*main, ("state", "running")))] == 1
    assert values[("lookout_source_state", (*main, ("state", "reconnecting")))] == 0
    assert values[("lookout_model_connection_state", (("state", "connected"),))] == 1
    assert values[("lookout_healthy", ())] == 1
    assert values[("lookout_model_connected", ())] == 1
    assert values[("lookout_degraded", ())] == 0
    assert values[("lookout_info", (("device_id", "test-cam"), ("model", "local")))] == 1


def test_metrics_say_what_became_of_the_pictures() -> None:
    counts = {"written": 5, "dropped": 1, "failed": 2, "pruned": 3}
    values = metrics(Telemetry(FakeApp(snapshot_counts=counts)))
    for outcome, n in counts.items():
        assert values[("lookout_snapshots_total", (("outcome", outcome),))] == n
    # Without --snapshots every outcome is there, at 0: a dashboard needs no special case.
    values = metrics(Telemetry(FakeApp()))
    assert values[("lookout_snapshots_total", (("outcome", "written"),))] == 0


def test_unknown_count_is_absent_from_metrics_not_zero() -> None:
    values = metrics(Telemetry(FakeApp(session=None)))
    assert not [key for key in values if key[0] == "lookout_people"]
    assert values[("lookout_frames_read_total", (("camera", "main"),))] == 0
    assert values[("lookout_healthy", ())] == 0


def test_health_names_what_is_wrong() -> None:
    app = FakeApp(session=None)
    tel = Telemetry(app)
    assert tel.health().reason == "starting"
    app.session = FakeSession()
    app.source_runner.state = SourceState.RECONNECTING
    tel.write(
        SourceStateEvent(source="0", state="reconnecting", reason="read timeout; retry in 2 s")
    )
    assert tel.health().reason == "source reconnecting (read timeout; retry in 2 s)"
    app.source_runner.state = SourceState.RUNNING
    # Running, but no count yet: not healthy, and it says why.
    assert tel.health().reason == "count unknown: no frame yet" and not tel.health().ok
    perceived(tel, count(2, 0.5))
    assert tel.health().ok
    # A missing model degrades the device; it still counts, so it is still healthy.
    app.session.connection_state = "unreachable"
    tel.write(ConnectionState(state="unreachable", reason="ConnectionRefusedError"))
    health = tel.health()
    assert health.ok and health.degraded and health.status == "degraded"
    assert health.reason.startswith("model unreachable since ")
    assert health.reason.endswith("(ConnectionRefusedError)")
    app.session.connection_state = "connected"
    tel.write(ConnectionState(state="connected"))
    assert tel.health().ok and tel.health().reason == "ok" and not tel.health().degraded
    # The count goes unknown (the camera stopped giving frames): unhealthy, with the reason.
    why = "no usable frame from 0 for 3 s"
    perceived(tel, CountChanged(t=9.0, count=None, previous=2, reason=why))
    assert not tel.health().ok and tel.health().reason == f"count unknown: {why}"
    assert tel.state()["count"] is None and tel.state()["count_reason"] == why
    assert tel.state()["raw"] is None  # the last frame's number is not shown as current
    assert tel.state()["history"][-1] == [9.0, None]  # the chart has a gap, not a held line


def test_running_streams_come_from_the_session() -> None:
    session = FakeSession(streams=[{"id": "c1", "name": "count_people", "args": {"region": []}}])
    tel = Telemetry(FakeApp(session=session))
    tel.write(StreamStarted(id="c1", name="count_people", args={}))
    assert tel.state()["streams"] == [{"id": "c1", "name": "count_people"}]
    assert tel.state()["startable"] == ["count_people"]


def test_strip_credentials_from_urls_only() -> None:
    assert strip_credentials("rtsp://u:p@10.0.0.2:554/s") == "rtsp://10.0.0.2:554/s"
    # An @ past the host may end a password with a / in it: what precedes it is hidden.
    assert strip_credentials("http://cam/a@b") == "http://***@b"
    assert strip_credentials("/videos/me@home.avi") == "/videos/me@home.avi"
