"""Frames nobody looks at are not decoded: grabbed and passed over, with the same results.

Files: the frames before ``not_before`` are grabbed, not converted to BGR (a
video) or not even opened (an image folder); the frames that come through
are exactly the ones a full read gives. Cameras: every frame is grabbed (the
driver's queue stays short) and only a frame someone waits for is decoded.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from pathlib import Path

import anyio
import cv2
import numpy as np
import pytest

from device.feeds.runner import SourceRunner, SourceState
from device.sources import CaptureSource, Grabs, ImageFolderSource, open_source
from device.sources.base import Grab
from device.vision.frame import Frame
from live.util.clock import MonotonicClock
from tests.datafiles import data_file

pytestmark = pytest.mark.anyio

GUARD_S = 10.0


def digest(frame: Frame) -> tuple[int, float, bytes]:
    return frame.index, frame.t_media, hashlib.blake2b(frame.image.tobytes()).digest()


async def test_a_video_sampled_at_2_fps_decodes_only_its_samples_and_they_are_the_same() -> None:
    clock = MonotonicClock()
    path = str(data_file("vtest.avi"))
    assert isinstance(open_source(path, clock_now=clock.now), Grabs)
    full = SourceRunner(open_source(path, clock_now=clock.now), clock=clock)
    expected = []
    with anyio.fail_after(GUARD_S * 6):
        while (frame := await full.next_frame()) is not None:
            if frame.index % 5 == 0:  # 2 fps of a 10 fps video
                expected.append(digest(frame))
    await full.close()

    runner = SourceRunner(open_source(path, clock_now=clock.now), clock=clock)
    got = []
    wanted: float | None = None
    with anyio.fail_after(GUARD_S * 6):
        while (frame := await runner.next_frame(not_before=wanted)) is not None:
            got.append(digest(frame))
            wanted = frame.t_media + 0.5
    await runner.close()
    assert got == expected and len(got) == 159
    assert runner.stats.frames_read == 159
    assert runner.stats.frames_undecoded == 795 - 159
    assert full.stats.frames_undecoded == 0
    assert runner.stats.decode_ms_mean > 0


def write_images(folder: Path, n: int, *, broken: set[int]) -> None:
    folder.mkdir()
    for i in range(n):
        path = folder / f"img{i}.jpg"
        if i in broken:
            path.write_bytes(b"not a jpeg")
        else:
            cv2.imwrite(str(path), np.full((24, 32, 3), 20 * i, np.uint8))


async def test_an_image_that_is_not_sampled_is_never_opened(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    write_images(folder, 6, broken={1, 3})
    clock = MonotonicClock()
    runner = SourceRunner(ImageFolderSource(folder, fps=1.0), clock=clock)
    got = []
    wanted: float | None = None
    with anyio.fail_after(GUARD_S):
        while (frame := await runner.next_frame(not_before=wanted)) is not None:
            got.append(frame.index)
            wanted = frame.t_media + 2.0
    await runner.close()
    assert got == [0, 2, 4]
    assert runner.stats.skipped_unreadable == 0  # the broken ones were never decoded
    assert runner.stats.frames_undecoded == 3

    runner = SourceRunner(ImageFolderSource(folder, fps=1.0), clock=clock)
    with anyio.fail_after(GUARD_S):
        while await runner.next_frame() is not None:
            pass
    await runner.close()
    assert runner.stats.skipped_unreadable == 2  # read in full, they are said


class SplitCamera(CaptureSource[int]):
    """A 500 fps camera whose grab is cheap and whose retrieve (the decode) is counted."""

    def __init__(self) -> None:
        super().__init__("split camera", is_camera=True, clock_now=time.monotonic)
        self.lock = threading.Condition()
        self.grabs = 0
        self.retrieves = 0

    def wait_grabs(self, n: int) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: self.grabs >= n, GUARD_S)

    def _open_capture(self) -> int:
        return 1

    def _read_capture(self, capture: int) -> tuple[np.ndarray, float | None] | None:
        raise AssertionError("a camera that can grab is never read in one go")

    def _grab_capture(self, capture: int) -> Grab | None:
        time.sleep(0.002)
        with self.lock:
            self.grabs += 1
            self.lock.notify_all()
        return Grab(None)

    def _retrieve_capture(self, capture: int, grab: Grab) -> np.ndarray | None:
        with self.lock:
            self.retrieves += 1
        return np.zeros((12, 16, 3), np.uint8)

    def _release_capture(self, capture: int) -> None:
        pass


async def test_a_camera_decodes_only_the_frames_someone_waits_for() -> None:
    camera = SplitCamera()
    clock = MonotonicClock()
    runner = SourceRunner(camera, clock=clock)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        assert await anyio.to_thread.run_sync(camera.wait_grabs, 50)
        assert runner.state is SourceState.RUNNING
        # Running (its first frame was decoded, to know it runs and its size); nobody
        # asked for a frame, so none since.
        assert camera.retrieves == 1
        frames = []
        wanted: float | None = None
        with anyio.fail_after(GUARD_S):
            for _ in range(5):
                frame = await runner.next_frame(not_before=wanted)
                assert frame is not None
                frames.append(frame)
                wanted = frame.t_media + 0.05  # 20 samples a second of a 500 fps camera
        await runner.close()
    assert all(b.t_media >= a.t_media + 0.05 - 1e-6 for a, b in itertools.pairwise(frames))
    assert camera.retrieves == 1 + 5
    assert camera.grabs > 50 + 5  # grabbed all along, waited for or not
    assert runner.stats.frames_undecoded == camera.grabs - camera.retrieves
