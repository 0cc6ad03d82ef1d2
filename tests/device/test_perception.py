"""Perception: the detector once per sampled frame, on the device, whatever consumes it."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import cv2
import numpy as np
import pytest

from device.app.config import build
from device.app.run import App
from device.bus import EventBus
from device.events import CountChanged
from device.perception import Perception, SharedDetector
from live.clock import MonotonicClock
from live.events import Emission, Event
from live.frame import Frame
from models.detections import Detections
from models.detector import PersonDetector
from tests.datafiles import data_file
from tools.percept import Percept
from tools.smoothing import CountSmoother

pytestmark = pytest.mark.anyio


class CountingDetector:
    """The real detector, counting how often it runs."""

    def __init__(self) -> None:
        self.inner = PersonDetector()
        self.calls = 0
        self._lock = threading.Lock()

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        with self._lock:
            self.calls += 1
        return self.inner.detect(frame_bgr)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.percepts: list[Percept] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass


def vtest_frames(every: int = 5, limit: int = 160) -> Iterator[Frame]:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    index = 0
    try:
        while index < limit:
            ok, image = cap.read()
            if not ok:
                return
            if index % every == 0:
                yield Frame(image, t_media=index / 10.0, index=index, source="vtest.avi")
            index += 1
    finally:
        cap.release()


@pytest.mark.slow
async def test_count_changes_on_real_video_are_the_smoothed_detector_counts() -> None:
    detector = PersonDetector()
    said: list[Event] = []
    perception = Perception(detector, detect_fps=2.0, publish=said.append)
    frames = list(vtest_frames())
    smoother = CountSmoother()
    expected = []
    for frame in frames:
        change = smoother.update(len(detector.detect(frame.image)), frame.t_media)
        if change is not None:
            expected.append((change.count, change.previous))
    for frame in frames:
        await perception.process(frame)
    changes = [(e.count, e.previous) for e in said if isinstance(e, CountChanged)]
    assert changes == expected and len(changes) >= 3  # arrivals and departures in the clip
    assert perception.stats.detected == len(frames)


async def test_frames_off_the_detection_grid_are_not_detected() -> None:
    class Blank:
        def detect(self, frame_bgr: np.ndarray) -> Detections:
            return Detections.empty()

    perception = Perception(Blank(), detect_fps=2.0)
    image = np.zeros((8, 8, 3), np.uint8)
    results = [await perception.process(Frame(image, t_media=i / 10, index=i)) for i in range(20)]
    detected = [r.frame.index for r in results if r is not None]
    assert detected == [0, 5, 10, 15]  # 2 per second of media time, on a fixed grid
    assert perception.stats.skipped_rate == 16


@pytest.mark.slow
async def test_the_detector_runs_once_per_frame_for_every_consumer(tmp_path: Path) -> None:
    # Consumers of each frame: the model's count_people stream (the local model calls it),
    # a second one started by the device, the console, the JSON log and a bus subscriber.
    config = build(
        {"source": str(data_file("vtest.avi")), "model": "local", "pace": "fast",
         "http": "", "events": tmp_path / "events.jsonl", "detect_fps": 2.0},
        environ={}, system_config=tmp_path / "none.toml",
    )  # fmt: skip
    clock = MonotonicClock()
    bus = EventBus(clock)
    recorder = Recorder()
    bus.subscribe(recorder)
    bus.on_percept(recorder.percepts.append)
    app = App(config, bus=bus, out=io.StringIO(), clock=clock)
    detector = CountingDetector()
    app.perception.shared = SharedDetector(detector)

    model_stream = anyio.Event()

    class Hook:
        def write(self, event: Event) -> None:
            if event.type == "stream_started":
                model_stream.set()

        def close(self) -> None:
            pass

    bus.subscribe(Hook())

    async def second_consumer() -> None:
        await model_stream.wait()  # the second consumer joins once the model's has started
        assert app.session is not None
        await app.session.call_tool("count_people")

    async with anyio.create_task_group() as tg:
        tg.start_soon(second_consumer)
        code = await app.run()
    assert code == 0
    streams = [e for e in recorder.events if e.type == "stream_stopped"]
    assert len(streams) == 2  # both consumers ran to the end of the clip
    assert all(e.to_dict()["frames_received"] > 100 for e in streams)
    # One detection per percept, however many consumed it.
    assert detector.calls == app.perception.stats.detected == len(recorder.percepts)
    assert detector.calls == app.capture.stats.frames_sampled
    emitted = [e for e in recorder.events if isinstance(e, Emission)]
    by_call: dict[str, list[int]] = {}
    for e in emitted:
        if "people" in e.payload and "status" not in e.payload:
            by_call.setdefault(e.id, []).append(e.payload["people"])
    counts = [e.count for e in recorder.events if isinstance(e, CountChanged)]
    # Both streams said the device's own count changes (the device's from its start).
    model_call, device_call = sorted(by_call, key=lambda cid: cid.startswith("device"))
    assert by_call[model_call] == counts
    assert by_call[device_call] == counts[len(counts) - len(by_call[device_call]) :]
