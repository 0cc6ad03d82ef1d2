"""Camera faults under the whole app: the session stays up and the count resumes.

A fake *live* camera serves real vtest frames and, on the test's command,
stalls in read(), raises, returns corrupt frames, changes resolution, and
disappears (open fails) before coming back. The real app (capture loop,
session, count_people with the ONNX detector, local model) must survive each
fault, say what happened in events, and keep counting afterwards.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import cv2
import numpy as np
import pytest

from device.app.config import build
from device.app.run import App
from device.bus import EventBus
from device.sources import CaptureSource, SourceError
from live.clock import MonotonicClock
from live.events import Event
from tests.datafiles import data_file
from tools.percept import Percept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def vtest_frames(n: int = 30) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    frames = []
    try:
        while len(frames) < n:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        cap.release()
    return frames


class VtestCamera(CaptureSource[int]):
    """A live camera replaying vtest frames, with faults switched on by the test."""

    def __init__(self, frames: list[np.ndarray]) -> None:
        super().__init__("fake vtest camera", live=True, clock_now=time.monotonic)
        self.frames = frames
        self.lock = threading.Lock()
        self.position = 0
        self.stall = threading.Event()  # set: the next read blocks until released
        self.release_stall = threading.Event()
        self.read_failures = 0
        self.corrupt = 0
        self.unplugged = False
        self.small = False
        self.opens = 0

    def _open_capture(self) -> int:
        with self.lock:
            self.opens += 1
            if self.unplugged:
                raise SourceError("cannot open fake vtest camera: no such device")
            return self.opens

    def _read_capture(self, capture: int) -> tuple[np.ndarray, float | None] | None:
        if self.stall.is_set():
            self.stall.clear()
            self.release_stall.wait(10)
        time.sleep(0.01)  # a 100 fps camera
        with self.lock:
            if self.unplugged or self.read_failures:
                self.read_failures = max(0, self.read_failures - 1)
                raise SourceError("fake vtest camera: read failed")
            frame = self.frames[self.position % len(self.frames)]
            self.position += 1
            if self.corrupt:
                self.corrupt -= 1
                return np.zeros((4, 4), dtype=np.float32), None  # not a BGR image at all
            if self.small:
                frame = cv2.resize(frame, (640, 480))
        return frame, None

    def _release_capture(self, capture: int) -> None:
        pass


class Probe:
    """An event sink and result observer the test can wait on."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.results: list[Percept] = []
        self.changed = anyio.Event()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def write(self, event: Event) -> None:
        self.events.append(event)
        self._notify()

    def on_result(self, result: Percept) -> None:
        self.results.append(result)
        self._notify()

    def close(self) -> None:
        pass

    def states(self) -> list[str]:
        return [e.to_dict()["state"] for e in self.events if e.type == "source_state"]

    async def wait(self, predicate: Callable[[], Any], timeout: float = 20) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self.changed.wait()

    async def processed_more(self, than: int) -> None:
        await self.wait(lambda: len(self.results) >= than + 3)


async def test_every_camera_fault_is_survived_and_the_count_resumes(tmp_path: Path) -> None:
    camera = VtestCamera(vtest_frames())
    probe = Probe()
    config = build(
        {
            "model": "local",
            "http": "",
            "detect_fps": 10.0,
            "min_hold": 0.0,
            "stall_timeout": 0.5,
            "events": tmp_path / "events.jsonl",
        },
        environ={},
        system_config=Path("/nonexistent"),
    )
    clock = MonotonicClock()
    bus = EventBus(clock)
    bus.subscribe(probe)
    bus.on_percept(probe.on_result)
    app = App(config, bus=bus, out=io.StringIO(), clock=clock, source_override=camera)
    app.source_runner.initial_backoff_s = 0.05
    app.source_runner.max_backoff_s = 0.2
    codes: list[int] = []

    async def run_app() -> None:
        codes.append(await app.run())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_app)
        await probe.wait(lambda: any(e.type == "count" for e in probe.events))
        assert probe.results[-1].raw >= 2  # real people in real frames

        # 1. A read that blocks (a lost RTSP stream): the watchdog gives up on it.
        camera.stall.set()
        await probe.wait(lambda: app.source_runner.stats.stalls == 1)
        await probe.wait(lambda: probe.states()[-1] == "running")
        camera.release_stall.set()
        await probe.processed_more(len(probe.results))

        # 2. Reads that raise.
        before = len(probe.states())
        camera.read_failures = 3
        await probe.wait(lambda: "reconnecting" in probe.states()[before:])
        await probe.wait(lambda: probe.states()[-1] == "running")
        await probe.processed_more(len(probe.results))

        # 3. Corrupt frames are dropped by the capture loop, nothing else happens.
        camera.corrupt = 40  # 0.4 s of garbage: the 10 fps sampler must meet some
        await probe.wait(lambda: app.capture.stats.dropped["unusable"] >= 1)
        await probe.processed_more(len(probe.results))

        # 4. The resolution changes mid-stream.
        camera.small = True
        await probe.wait(lambda: bool(probe.results) and probe.results[-1].frame.shape[1] == 640)
        await probe.processed_more(len(probe.results))
        assert app.source_runner.stats.resolution_changes >= 1

        # 5. The camera disappears, then comes back.
        before = len(probe.states())
        camera.unplugged = True
        await probe.wait(lambda: probe.states()[before:].count("reconnecting") >= 2)
        camera.unplugged = False
        await probe.wait(lambda: probe.states()[-1] == "running")
        await probe.processed_more(len(probe.results))

        assert app.session is not None and len(app.session.running_streams()) == 1
        app.request_stop()
    assert codes == [0]
    reasons = [e.to_dict()["reason"] for e in probe.events if e.type == "source_state"]
    assert any("no such device" in r for r in reasons)
    assert any("read failed" in r for r in reasons)
    assert any("stall" in r or "no frame" in r for r in reasons), reasons
