"""The motion gate: a still scene costs a heartbeat detection, a moving one every frame.

Unit tests on synthetic frames (no motion, a moving square, lighting noise),
the gate on media time (heartbeats every N s, the hangover after motion),
perception with a scripted detector (the count holds, dwell goes on, a
heartbeat's miss is settled at the full rate), and the real detector: on an
empty plaza (the per-pixel median of the sample video) it runs only on
heartbeats; on the sample video the count changes, crossings, zone changes
and dwells are the same with the gate and without it.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from device.app.parts import motion_config
from device.app.run import App
from device.app.wiring import build_app
from device.bus import EventBus
from device.config import ConfigError, build
from device.events import CountChanged, DwellPassed, LineCrossed, ZoneCount
from device.outputs.telemetry import Telemetry
from device.vision.frame import Frame
from device.vision.motion import MotionConfig, MotionDetector, MotionGate, small_plane
from device.vision.percept import Percept
from device.vision.perception import Perception
from device.vision.scene import SceneSpec
from device.vision.shared_detector import SharedDetector
from live.events import Event
from live.util.clock import MonotonicClock
from models.detections import Detections
from models.detector import PersonDetector
from tests.datafiles import data_file
from tests.recorder import Recorder

pytestmark = pytest.mark.anyio

GREY = 90


def scene(square_at: tuple[int, int] | None = None, *, brightness: int = 0) -> np.ndarray:
    """A 320x240 textured wall, optionally with a 30x60 'person' (a bright block)."""
    rng = np.random.default_rng(7)  # the same texture every call: only the square moves
    image = np.clip(GREY + rng.normal(0, 12, (240, 320, 1)), 0, 255).repeat(3, axis=2)
    image = np.clip(image + brightness, 0, 255).astype(np.uint8)
    if square_at is not None:
        x, y = square_at
        image[y : y + 60, x : x + 30] = 230
    return image


# ------------------------------------------------------------------ the motion test


def test_the_small_plane_is_a_green_plane_reduced_by_whole_factors() -> None:
    image = np.zeros((576, 768, 3), np.uint8)
    image[:, :, 1] = 200
    small = small_plane(image, 160)
    assert small.shape == (144, 192) and small.dtype == np.float32
    assert float(small.min()) == float(small.max()) == 200.0
    assert small_plane(np.zeros((8, 8, 3), np.uint8), 160).shape == (8, 8)


def test_a_still_scene_has_no_motion() -> None:
    detector = MotionDetector()
    assert detector.measure(scene(), 0.0) is None  # nothing to compare with yet
    shares = [detector.measure(scene(), i * 0.2) for i in range(1, 50)]
    assert shares == [0.0] * 49


def test_a_moving_square_is_motion_every_frame() -> None:
    detector = MotionDetector()
    config = detector.config
    detector.measure(scene((20, 100)), 0.0)
    for i in range(1, 40):
        # 6 px a frame at 5 fps: a person strolling across a 320 px wide view.
        share = detector.measure(scene((20 + 6 * i, 100)), i * 0.2)
        assert share is not None and share > 5 * config.threshold, (i, share)


def test_a_square_that_stops_becomes_background() -> None:
    detector = MotionDetector()
    for i in range(10):
        detector.measure(scene((20 + 6 * i, 100)), i * 0.2)
    shares = [detector.measure(scene((74, 100)), 2.0 + i * 0.2) for i in range(40)]
    assert shares[0] is not None and shares[0] > detector.config.threshold
    # Absorbed within a few background time constants, then still.
    assert all(s == 0.0 for s in shares[-15:])


def test_sensor_noise_and_slow_light_changes_are_not_motion() -> None:
    detector = MotionDetector()
    rng = np.random.default_rng(0)
    shares = []
    for i in range(150):  # 30 s at 5 fps, the light rising by 1 level a second
        image = scene(brightness=i // 5).astype(np.int16)
        noisy = np.clip(image + rng.normal(0, 6, image.shape), 0, 255).astype(np.uint8)
        shares.append(detector.measure(noisy, i * 0.2))
    assert max(s for s in shares if s is not None) < detector.config.threshold


def test_a_light_switched_on_is_motion_until_it_is_background() -> None:
    gate = MotionGate()
    gate.observe(scene(), 0.0)
    gate.ran(0.0, changed=False)
    share = gate.observe(scene(brightness=60), 0.2)
    assert share is not None and share > 0.5
    assert gate.decide(0.4) == "motion"  # better a few detections too many than a miss


# ------------------------------------------------------------------ the gate on media time


def test_a_still_scene_is_detected_on_heartbeats_only() -> None:
    gate = MotionGate(MotionConfig(heartbeat_s=10.0))
    reasons: dict[float, str] = {}
    for i in range(126):  # 25 s at 5 fps
        t = round(i * 0.2, 3)
        gate.observe(scene(), t)
        reason = gate.decide(t)
        if reason is not None:
            reasons[t] = reason
            gate.ran(t, changed=False)
    assert reasons == {0.0: "start", 10.0: "heartbeat", 20.0: "heartbeat"}
    assert gate.stats.held == 123 and gate.stats.heartbeats == 2


def test_after_motion_the_full_rate_holds_for_the_hangover() -> None:
    gate = MotionGate(MotionConfig(heartbeat_s=10.0, hangover_s=2.0))
    detected = []
    for i in range(50):  # 10 s at 5 fps; something flashes by in the frame at 3 s
        t = round(i * 0.2, 3)
        gate.observe(scene((100, 100)) if t == 3.0 else scene(), t)
        if gate.decide(t) is not None:
            detected.append(t)
            gate.ran(t, changed=False)
    # The start, then every frame from the one that moved to 2 s after it.
    assert detected == [0.0, *(round(3.0 + 0.2 * k, 3) for k in range(11))]


def test_a_heartbeat_that_finds_other_people_turns_the_full_rate_on() -> None:
    gate = MotionGate(MotionConfig(heartbeat_s=10.0, hangover_s=2.0))
    gate.observe(scene(), 0.0)
    gate.ran(0.0, changed=False)
    gate.observe(scene(), 10.0)
    assert gate.decide(10.0) == "heartbeat"
    gate.ran(10.0, changed=True)  # someone was missed (or found)
    gate.observe(scene(), 10.2)
    assert gate.decide(10.2) == "motion" and gate.decide(12.0) == "motion"
    assert gate.decide(12.4) is None


def test_after_a_reset_the_next_frame_is_detected() -> None:
    gate = MotionGate()
    gate.observe(scene(), 0.0)
    gate.ran(0.0, changed=False)
    gate.observe(scene(), 0.2)
    assert gate.decide(0.2) is None
    gate.reset()
    gate.observe(scene(), 0.4)
    assert gate.decide(0.4) == "start"


# ------------------------------------------------------------------ perception with the gate


class Script:
    """A detector that sees the boxes the test says, counting its runs."""

    def __init__(self) -> None:
        self.boxes: list[tuple[float, float, float, float]] = []
        self.score = 0.9
        self.calls = 0

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        self.calls += 1
        boxes = np.asarray(self.boxes, np.float32).reshape(-1, 4)
        return Detections(boxes, np.full(len(boxes), self.score, np.float32))


class Now:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def still_frames(seconds: float, fps: float = 5.0, start: int = 0) -> Iterator[Frame]:
    image = scene((40, 120))
    for i in range(start, start + round(seconds * fps)):
        yield Frame(image, t_media=i / fps, index=i, source="cam")


async def test_a_still_person_is_held_with_heartbeats_and_every_frame_has_a_percept() -> None:
    detector, now = Script(), Now()
    detector.boxes = [(40, 120, 70, 180)]
    said: list[Event] = []
    seen: list[Percept] = []
    zone = ((0.0, 0.0), (0.5, 0.0), (0.5, 1.0), (0.0, 1.0))
    perception = Perception(
        detector,
        detect_fps=5.0,
        publish=said.append,
        on_percept=seen.append,
        now=now,
        threshold=0.45,
        scene=SceneSpec(zones={"desk": (zone, 15.0)}),
        motion=MotionConfig(heartbeat_s=10.0),
    )
    for frame in still_frames(25.0):
        now.t = 1000.0 + frame.t_media
        assert await perception.process(frame) is not None  # every due frame, gated or not
        # Gated or not, the device looked just now: never stale.
        assert perception.last_at == now.t
    assert detector.calls == 3  # t = 0, 10 and 20 s
    assert perception.stats.detected == 3 and perception.stats.gated == 122
    assert [p.gated for p in seen].count(False) == 3
    assert all(p.count == 1 and p.raw == 1 and len(p.detections) == 1 for p in seen)
    assert all(p.detect_ms == 0.0 for p in seen if p.gated)
    assert [(e.count, e.previous) for e in said if isinstance(e, CountChanged)] == [(1, None)]
    # The person stays one tracked person, seen in every frame, and their stay in the
    # zone goes on through the held frames: the dwell is said once, at 15 s.
    assert {t.id for p in seen for t in p.people} == {1}
    dwells = [e for e in said if isinstance(e, DwellPassed)]
    assert [(d.track, d.t_media) for d in dwells] == [(1, 15.0)]


async def test_a_missed_person_at_a_heartbeat_is_settled_at_the_full_rate_not_dropped() -> None:
    detector = Script()
    detector.boxes = [(40, 120, 70, 180)]
    said: list[Event] = []
    perception = Perception(
        detector, detect_fps=5.0, publish=said.append, motion=MotionConfig(heartbeat_s=10.0)
    )
    calls_at: list[float] = []
    for frame in still_frames(20.0):
        # The detector misses them at the first heartbeat only.
        detector.boxes = [] if frame.t_media == 10.0 else [(40, 120, 70, 180)]
        before = detector.calls
        await perception.process(frame)
        if detector.calls > before:
            calls_at.append(frame.t_media)
    # The miss is a change: detected at the full rate for the hangover, then held again.
    assert calls_at[:2] == [0.0, 10.0]
    assert calls_at[2:] == [round(10.0 + 0.2 * k, 1) for k in range(1, 12)]
    # The track coasted through the miss: still one person, never counted down.
    assert [(e.count, e.previous) for e in said if isinstance(e, CountChanged)] == [(1, None)]
    assert perception.tracker.stats.confirmed == 1


async def test_someone_walking_in_is_detected_at_the_full_rate() -> None:
    detector = Script()
    perception = Perception(detector, detect_fps=5.0, motion=MotionConfig())
    for frame in still_frames(4.0):
        await perception.process(frame)
    assert detector.calls == 1
    empty = scene()
    for i in range(20, 40):  # from 4 s to 8 s, someone walks across
        x = 6 * (i - 20)
        detector.boxes = [(x, 120, x + 30, 180)]
        image = empty.copy()
        image[120:180, x : x + 30] = 230
        await perception.process(Frame(image, t_media=i / 5, index=i))
    assert detector.calls == 21
    current = perception.current()
    assert current is not None and current.count == 1 and not current.gated


async def test_a_failing_detector_is_retried_at_the_full_rate_and_forced_frames_detected() -> None:
    class FailsLater(Script):
        def detect(self, frame_bgr: np.ndarray) -> Detections:
            if self.calls >= 1:
                self.calls += 1
                raise RuntimeError("bad frame")
            return super().detect(frame_bgr)

    detector = FailsLater()
    perception = Perception(detector, detect_fps=5.0, motion=MotionConfig(heartbeat_s=10.0))
    for frame in still_frames(14.0):
        await perception.process(frame)
    # Held until the heartbeat at 10 s fails: nothing is known to hold any more, so it
    # keeps trying at the full rate (each failure re-arms the gate).
    assert detector.calls == 1 + 20 and perception.stats.errors == 20
    forced = Script()
    perception = Perception(forced, detect_fps=5.0, motion=MotionConfig())
    for frame in still_frames(2.0):
        await perception.process(frame, force=True)
    assert forced.calls == 10 and perception.stats.gated == 0


# ------------------------------------------------------------------ settings


def test_the_gate_is_on_by_default_and_set_by_flag_or_file(tmp_path: Path) -> None:
    none = tmp_path / "none.toml"
    default = build({}, environ={}, system_config=none)
    assert default.perception.motion == "on"
    assert motion_config(default) == MotionConfig(threshold=0.001, heartbeat_s=10.0)
    flags = build({"motion": "off", "motion_heartbeat": "30"}, environ={}, system_config=none)
    assert flags.perception.motion == "off" and motion_config(flags) is None
    assert flags.perception.motion_heartbeat == 30.0
    toml = tmp_path / "lookout.toml"
    toml.write_text("motion = false\nmotion-threshold = 0.01\n")
    from_file = build({}, config_path=toml, environ={}, system_config=none)
    assert from_file.perception.motion == "off" and from_file.perception.motion_threshold == 0.01
    with pytest.raises(ConfigError, match="--motion-threshold"):
        build({"motion_threshold": "2"}, environ={}, system_config=none)
    toml.write_text("motion-hangover = 5\nmotion-pixel-delta = 40\n")
    tuned = motion_config(build({}, config_path=toml, environ={}, system_config=none))
    assert tuned is not None and (tuned.hangover_s, tuned.pixel_delta) == (5.0, 40.0)
    with pytest.raises(ConfigError, match="--motion-pixel-delta"):
        build({"motion_pixel_delta": "300"}, environ={}, system_config=none)


# ------------------------------------------------------------------ the real detector


def empty_plaza(every: int = 8) -> np.ndarray:
    """The sample video without its people: the per-pixel median of many of its frames."""
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    frames = []
    try:
        index = 0
        while True:
            ok, image = cap.read()
            if not ok:
                break
            if index % every == 0:
                frames.append(image)
            index += 1
    finally:
        cap.release()
    return np.asarray(np.median(np.stack(frames), axis=0), np.uint8)


def write_video(path: Path, image: np.ndarray, seconds: float, fps: float = 10.0) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, image.shape[1::-1])
    try:
        for _ in range(round(seconds * fps)):
            writer.write(image)
    finally:
        writer.release()
    return path


class CountingDetector:
    """The real detector as the app runs it (down to the tracker's low score, one thread);
    ``calls`` counts its runs. Under ``remembered_detections`` a picture already seen in
    this session (by either run of the app here, or another test) is not inferred again."""

    def __init__(self, threshold: float = 0.2) -> None:
        self.inner = PersonDetector(threshold=threshold, threads=1)
        self.calls = 0

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        self.calls += 1
        return self.inner.detect(frame_bgr)


POST = "post=0.5599,0.7292,0.5599,0.2083"
LEFT = "left=0.05,0.3,0.45,0.3,0.45,0.95,0.05,0.95"


async def run_app(
    settings: dict[str, object], detector: object, tmp_path: Path
) -> tuple[App, list[Event], Telemetry]:
    config = build(
        {"model": "local", "pace": "fast", "http": "", **settings},
        environ={},
        system_config=tmp_path / "none.toml",
    )
    clock = MonotonicClock()
    bus = EventBus(clock)
    recorder = Recorder()
    bus.subscribe(recorder)
    app = build_app(config, operations=False, bus=bus, out=io.StringIO(), clock=clock)
    app.perception.shared = SharedDetector(detector)  # type: ignore[arg-type]
    telemetry = Telemetry(app.state)
    bus.subscribe(telemetry)
    bus.on_percept(telemetry.on_percept)
    assert await app.run() == 0
    return app, recorder.events, telemetry


@pytest.mark.slow
async def test_on_the_empty_plaza_the_real_detector_runs_only_on_heartbeats(
    tmp_path: Path,
) -> None:
    video = write_video(tmp_path / "plaza.avi", empty_plaza(), seconds=30.0)
    detector = CountingDetector()
    app, events, telemetry = await run_app(
        {"source": str(video), "lines": [POST], "motion_heartbeat": 10.0}, detector, tmp_path
    )
    stats = app.perception.stats
    assert app.capture.stats.frames_sampled == 150  # 30 s at 5 fps (a line: 5 fps)
    assert detector.calls == stats.detected == 3  # t = 0, 10 and 20 s
    assert stats.gated == 147
    counts = [e for e in events if isinstance(e, CountChanged)]
    assert [c.count for c in counts] == [0, None]  # nobody, then the file ended
    assert not [e for e in events if isinstance(e, LineCrossed)]
    # Half the frames were never decoded into pixels (10 fps read, 5 fps sampled).
    assert app.capture.stats.frames_read == 300
    assert app.capture.stats.frames_undecoded == app.source_runner.stats.frames_undecoded == 150
    # The page and /metrics say so.
    state = telemetry.state()["perception"]
    assert state["motion_gate"] is True and state["gated"] is True
    assert (state["frames_detected"], state["frames_gated"]) == (3, 147)
    assert state["decode_ms"] is not None and state["decode_ms"] > 0
    metrics = telemetry.metrics_text().decode()
    assert 'lookout_frames_gated_total{camera="main"} 147.0' in metrics
    assert 'lookout_frames_undecoded_total{camera="main"} 150.0' in metrics
    assert 'lookout_detections_per_second{camera="main"} ' in metrics
    assert 'lookout_decode_seconds_mean{camera="main"} ' in metrics


def scene_events(events: list[Event]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for e in events:
        if isinstance(e, CountChanged):
            out.append(("count", e.count, e.previous, e.t_media))
        elif isinstance(e, LineCrossed):
            out.append(("crossing", e.line, e.direction, e.track, e.t_media, e.total_in))
        elif isinstance(e, ZoneCount):
            out.append(("zone", e.zone, e.people, e.previous, e.dwelling, e.t_media))
        elif isinstance(e, DwellPassed):
            out.append(("dwell", e.zone, e.track, e.seconds, e.t_media))
    return out


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
async def test_the_gate_changes_nothing_on_the_sample_video(tmp_path: Path) -> None:
    """Someone always moves in the sample video: every frame is detected, and the count
    changes, line crossings, zone changes and dwells are the ones without the gate."""
    detector = CountingDetector()  # one inference per frame for both runs (remembered)
    settings = {
        "source": str(data_file("vtest.avi")),
        "lines": [POST],
        "zones": [LEFT],
        "dwell": 10.0,
    }
    off_app, off, _ = await run_app({**settings, "motion": "off"}, detector, tmp_path)
    on_app, on, _ = await run_app({**settings, "motion": "on"}, detector, tmp_path)
    assert off_app.perception.gate is None and on_app.perception.gate is not None
    assert on_app.perception.gate.stats.tests == on_app.capture.stats.frames_sampled
    assert on_app.perception.stats.gated == 0
    assert on_app.perception.stats.detected == off_app.perception.stats.detected >= 390
    expected = scene_events(off)
    assert sum(e[0] == "crossing" for e in expected) >= 20
    assert sum(e[0] == "count" for e in expected) >= 5
    assert scene_events(on) == expected
