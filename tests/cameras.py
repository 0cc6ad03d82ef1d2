"""A live camera for tests: real vtest frames, with faults the test switches on."""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np

from device.sources import CaptureSource, SourceError
from tests.datafiles import data_file


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
        super().__init__("fake vtest camera", is_camera=True, clock_now=time.monotonic)
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


__all__ = ["VtestCamera", "vtest_frames"]
