"""A camera is asked for little more than the pipeline samples, and what it gave is shown.

No webcam can run here, so cv2.VideoCapture is replaced by a driver-like fake that
offers some frame rates and refuses others; the sources, the app and the status are real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from device.sources import open_source
from device.sources.base import camera_fps
from device.sources.opencv import OpenCVSource


def test_the_rate_asked_is_the_lowest_common_mode_twice_the_sampling_rate() -> None:
    assert camera_fps(2.0, 30.0) == 5.0  # the default count: 2 detections a second
    assert camera_fps(5.0, 30.0) == 10.0  # lines and zones
    assert camera_fps(1.0, 15.0) == 5.0
    assert camera_fps(2.0, 5.0) is None  # already as low as would be asked
    assert camera_fps(20.0, 30.0) is None  # no mode twice as fast but below the default
    assert camera_fps(2.0, None) is None  # a camera that does not say its rate is left alone


class FakeDriver:
    """A webcam's capture: 30 fps by default, some rates it takes, others it refuses."""

    def __init__(self, offers: tuple[float, ...] = (30.0, 15.0, 10.0, 5.0)) -> None:
        self.offers = offers
        self.rate = 30.0
        self.asked: list[float] = []

    def isOpened(self) -> bool:  # cv2's name
        return True

    def set(self, prop: int, value: float) -> bool:
        if prop != cv2.CAP_PROP_FPS:
            return True
        self.asked.append(value)
        if value in self.offers:
            self.rate = value
            return True
        return False

    def get(self, prop: int) -> float:
        return self.rate if prop == cv2.CAP_PROP_FPS else 0.0

    def grab(self) -> bool:
        return True

    def retrieve(self) -> tuple[bool, np.ndarray]:
        return True, np.zeros((48, 64, 3), np.uint8)

    def release(self) -> None:
        pass


def camera_with(monkeypatch: pytest.MonkeyPatch, driver: FakeDriver) -> OpenCVSource:
    monkeypatch.setattr(cv2, "VideoCapture", lambda *a: driver)
    source = open_source("0", clock_now=lambda: 0.0)
    assert isinstance(source, OpenCVSource) and source.kind == "camera"
    return source


def test_a_webcam_sampled_twice_a_second_is_opened_at_5_fps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver = FakeDriver()
    camera = camera_with(monkeypatch, driver)
    camera.request_fps(2.0)
    camera.open()
    try:
        assert driver.asked == [5.0] and camera.fps == 5.0
        assert camera.fps_note == "asked for 5 fps (its default 30): gives 5"
        assert camera.read() is not None
    finally:
        camera.close()


def test_a_camera_that_refuses_stays_at_its_own_rate_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver = FakeDriver(offers=(30.0,))
    camera = camera_with(monkeypatch, driver)
    camera.request_fps(2.0)
    camera.open()
    try:
        assert camera.fps == 30.0
        assert camera.fps_note == "asked for 5 fps: refused or too few, at its own 30 fps"
    finally:
        camera.close()


class TooSlowDriver(FakeDriver):
    """Takes any rate but gives 1 fps: less than is sampled, so it must be put back."""

    def set(self, prop: int, value: float) -> bool:
        if prop == cv2.CAP_PROP_FPS:
            self.asked.append(value)
            self.rate = 1.0 if value != 30.0 else 30.0
        return True


def test_a_camera_that_gives_less_than_is_sampled_is_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver = TooSlowDriver()
    camera = camera_with(monkeypatch, driver)
    camera.request_fps(2.0)
    camera.open()
    try:
        assert driver.asked == [5.0, 30.0] and camera.fps == 30.0
        assert camera.fps_note == "asked for 5 fps: refused or too few, at its own 30 fps"
    finally:
        camera.close()


def test_without_a_request_the_camera_is_not_touched_and_files_ignore_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    driver = FakeDriver()
    camera = camera_with(monkeypatch, driver)
    camera.open()
    camera.close()
    assert driver.asked == [] and camera.fps_note is None
    monkeypatch.undo()
    from tests.datafiles import data_file

    video = open_source(str(data_file("vtest.avi")), clock_now=lambda: 0.0)
    assert isinstance(video, OpenCVSource)
    video.request_fps(2.0)
    video.open()
    try:
        assert video.fps == 10.0 and video.fps_note is None  # a file plays at its own rate
    finally:
        video.close()


def test_the_app_asks_its_camera_for_the_detection_rate_and_the_status_shows_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from device.app.wiring import build_app
    from device.config import build
    from device.outputs.telemetry import Telemetry

    driver = FakeDriver()
    monkeypatch.setattr(cv2, "VideoCapture", lambda *a: driver)
    config = build(
        {"source": "0", "model": "local", "http": "", "events": str(tmp_path / "e.jsonl")},
        environ={},
        system_config=tmp_path / "none.toml",
    )
    app: Any = build_app(config)
    assert app.source.wanted_fps == 2.0  # the default count's detection rate
    app.source.open()
    try:
        state = Telemetry(app.state).state()
        assert state["source"]["fps"] == 5.0
        assert state["source"]["fps_note"] == "asked for 5 fps (its default 30): gives 5"
    finally:
        app.source.close()


def test_camera_fps_asks_for_exactly_that_and_0_leaves_the_camera_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from device.app.wiring import build_app
    from device.config import build

    def app_with(driver: FakeDriver, **flags: str) -> Any:
        monkeypatch.setattr(cv2, "VideoCapture", lambda *a: driver)
        given = {"source": "0", "model": "local", "http": "", **flags}
        config = build(given, environ={}, system_config=tmp_path / "none.toml")
        return build_app(config)

    dim = FakeDriver()
    app = app_with(dim, camera_fps="15")  # a dim scene: shorter exposures than at 5 fps
    app.source.open()
    app.source.close()
    assert dim.asked == [15.0] and app.source.fps == 15.0
    alone = FakeDriver()
    app = app_with(alone, camera_fps="0")
    assert app.source.wanted_fps is None
    app.source.open()
    app.source.close()
    assert alone.asked == [] and app.source.fps == 30.0
