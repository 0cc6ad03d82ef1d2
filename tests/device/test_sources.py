"""Frame sources and the source runner: real OpenCV on real media, fakes for the faults.

Live-source faults use a fake camera built on the real CaptureSource (so the
close-while-reading rule under test is the production one) and a FakeClock
for backoff and the stall watchdog. Real time appears only as fail_after
guards, so a broken test fails instead of hanging.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import cv2
import numpy as np
import pytest

from device.feeds.runner import SourceRunner, SourceState, StateChange
from device.sources import (
    CaptureSource,
    Frame,
    ImageFolderSource,
    OpenCVSource,
    Picamera2Source,
    SourceError,
    SourceUnavailable,
    UnreadableFrame,
    open_source,
    safe_url,
)
from live.util.clock import FakeClock, settle
from tests.datafiles import data_file

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

GUARD_S = 5.0  # real-time bound on any single wait in these tests

S = SourceState


# ------------------------------------------------------------------ helpers


class Recorder:
    """on_state callback: every change, the virtual time it came at, and the thread."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.changes: list[StateChange] = []
        self.times: list[float] = []
        self.threads: set[int] = set()
        self._changed = anyio.Event()

    def __call__(self, change: StateChange) -> None:
        self.changes.append(change)
        self.times.append(self.clock.now())
        self.threads.add(threading.get_ident())
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def states(self) -> list[SourceState]:
        return [c.state for c in self.changes]

    def count(self, state: SourceState) -> int:
        return self.states.count(state)

    async def wait(self, state: SourceState, n: int = 1) -> StateChange:
        """The n-th change to ``state``, once it has happened."""
        with anyio.fail_after(GUARD_S):
            while self.count(state) < n:
                await self._changed.wait()
        return [c for c in self.changes if c.state is state][n - 1]


async def advance(clock: FakeClock, seconds: float) -> None:
    await settle()
    clock.advance(seconds)


async def next_frame(runner: SourceRunner) -> Frame:
    with anyio.fail_after(GUARD_S):
        frame = await runner.next_frame()
    assert frame is not None
    return frame


async def in_thread(wait: Callable[[float], bool]) -> bool:
    """Wait on a threading primitive without blocking the loop."""
    return await anyio.to_thread.run_sync(wait, GUARD_S)


class FakeCapture:
    """One opened fake camera; remembers how it was treated."""

    def __init__(self, serial: int) -> None:
        self.serial = serial
        self.reading = 0
        self.released = threading.Event()
        self.released_while_reading = False
        self.reads_after_release = 0


class FakeCamera(CaptureSource[FakeCapture]):
    """A camera with switchable faults. Each open makes a new FakeCapture; frames
    are filled with the capture's serial number so a test can tell which one
    delivered them."""

    def __init__(self, clock: FakeClock, *, shape: tuple[int, int] = (48, 64)) -> None:
        super().__init__("fake camera", is_camera=True, clock_now=clock.now)
        self.period_s = 0.001  # the fake's frame interval, so it does not spin a core
        self.shape = shape
        self.captures: list[FakeCapture] = []
        self.open_times: list[float] = []
        self.open_failures = 0
        self.read_failures = 0
        self.unplugged = False
        self.block_next_read = False
        self.blocked = threading.Event()
        self.unblock = threading.Event()
        self.loop_thread = threading.get_ident()
        self.on_loop_thread: list[str] = []
        self._state = threading.Lock()
        self._served = threading.Condition()
        self.frames_served = 0

    def _check_thread(self, what: str) -> None:
        if threading.get_ident() == self.loop_thread:
            self.on_loop_thread.append(what)

    def _open_capture(self) -> FakeCapture:
        self._check_thread("open")
        with self._state:
            self.open_times.append(self._clock_now())
            if self.unplugged or self.open_failures:
                self.open_failures = max(0, self.open_failures - 1)
                raise SourceError("cannot open fake camera")
            capture = FakeCapture(len(self.captures) + 1)
            self.captures.append(capture)
            return capture

    def _read_capture(self, capture: FakeCapture) -> tuple[np.ndarray, float | None] | None:
        self._check_thread("read")
        capture.reading += 1
        try:
            if capture.released.is_set():
                capture.reads_after_release += 1
            with self._state:
                block, self.block_next_read = self.block_next_read, False
                fail = self.unplugged or self.read_failures > 0
                self.read_failures = max(0, self.read_failures - 1)
                shape = self.shape
            if block:
                self.blocked.set()
                self.unblock.wait(GUARD_S * 2)
            elif fail:
                raise SourceError("fake camera: read failed")
            else:
                time.sleep(self.period_s)
            image = np.full((*shape, 3), capture.serial, np.uint8)
            with self._served:
                self.frames_served += 1
                self._served.notify_all()
            return image, None
        finally:
            capture.reading -= 1

    def _release_capture(self, capture: FakeCapture) -> None:
        self._check_thread("release")
        if capture.reading:
            capture.released_while_reading = True
        capture.released.set()

    def wait_served(self, n: int, timeout: float) -> bool:
        with self._served:
            return self._served.wait_for(lambda: self.frames_served >= n, timeout)


class FakeFile:
    """A video file whose frame ``i`` fails ``fail_at[i]`` times (-1: always)."""

    is_camera = False

    def __init__(self, frames: int, *, fail_at: dict[int, int] | None = None) -> None:
        self.name = "fake.avi"
        self.fps: float | None = 10.0
        self.frames = frames
        self.fail_at = dict(fail_at or {})
        self.pos = 0
        self.opened = False
        self.opens = 0
        self.seeks: list[int] = []
        self.loop_thread = threading.get_ident()
        self.on_loop_thread: list[str] = []

    def _check_thread(self, what: str) -> None:
        if threading.get_ident() == self.loop_thread:
            self.on_loop_thread.append(what)

    def open(self) -> None:
        self._check_thread("open")
        self.opens += 1
        self.opened = True
        self.pos = 0

    def read(self) -> Frame | None:
        self._check_thread("read")
        assert self.opened
        if self.pos >= self.frames:
            return None
        left = self.fail_at.get(self.pos, 0)
        if left:
            self.fail_at[self.pos] = left - 1 if left > 0 else left
            raise SourceError(f"fake.avi: cannot decode frame {self.pos}")
        index = self.pos
        self.pos += 1
        return Frame(np.full((4, 4, 3), index, np.uint8), t_media=index / 10.0, index=index)

    def seek(self, index: int) -> None:
        self._check_thread("seek")
        self.seeks.append(index)
        self.pos = index

    def close(self) -> None:
        self._check_thread("close")
        self.opened = False


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says anything."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def mjpeg_that_stalls() -> Iterator[str]:
    """An HTTP MJPEG stream that sends three frames, then goes quiet."""
    ok, jpeg = cv2.imencode(".jpg", np.zeros((48, 64, 3), np.uint8))
    assert ok
    part = b"--f\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%b\r\n" % (
        len(jpeg),
        jpeg.tobytes(),
    )
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    done = threading.Event()

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.recv(4096)
            conn.sendall(
                b"HTTP/1.0 200 OK\r\n"
                b"Content-Type: multipart/x-mixed-replace; boundary=f\r\n\r\n" + part * 3
            )
            done.wait(GUARD_S * 2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/video.mjpg"
    finally:
        done.set()
        server.close()
        thread.join(GUARD_S)


# ------------------------------------------------------------------ specs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no/such/clip.avi", "file not found: no/such/clip.avi"),
        ("/no/such/folder/", "file not found: /no/such/folder/"),
        # Issue 34: a list of cameras is said how to write, not only "not found".
        ("door.mp4,till.mp4", "several cameras are one --source each, named: --source door="),
        ("", "no source given"),
        ("gopher://cam/x", "unsupported source URL scheme gopher://"),
    ],
)
def test_bad_specs_fail_with_one_line(spec: str, message: str) -> None:
    with pytest.raises(SourceError) as err:
        open_source(spec, clock_now=time.monotonic)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_spec_kinds(tmp_path: Path) -> None:
    image = tmp_path / "one.png"
    cv2.imwrite(str(image), np.zeros((8, 8, 3), np.uint8))
    now = time.monotonic
    assert isinstance(open_source("0", clock_now=now), OpenCVSource)
    assert open_source("0", clock_now=now).is_camera
    assert isinstance(open_source("picam", clock_now=now), Picamera2Source)
    assert isinstance(open_source("picamera2", clock_now=now), Picamera2Source)
    stream = open_source("rtsp://admin:hunter2@10.0.0.5:554/live?token=abc", clock_now=now)
    assert isinstance(stream, OpenCVSource) and stream.is_camera
    assert "hunter2" not in stream.name and "admin" not in stream.name and "abc" not in stream.name
    assert stream.name.startswith("rtsp://10.0.0.5:554/live")
    folder = open_source(str(tmp_path), clock_now=now)
    assert isinstance(folder, ImageFolderSource) and not folder.is_camera
    single = open_source(str(image), clock_now=now)
    assert isinstance(single, ImageFolderSource)


def test_safe_url_strips_credentials() -> None:
    assert safe_url("rtsp://u:p@cam:554/s") == "rtsp://cam:554/s"
    assert safe_url("http://cam/video.mjpg?action=stream") == "http://cam/video.mjpg?action=stream"
    assert "s3cret" not in safe_url("https://cam/x?password=s3cret&a=1")


def test_empty_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no images here")
    with pytest.raises(SourceError, match="no images"):
        open_source(str(tmp_path), clock_now=time.monotonic)


def test_undecodable_video_file_fails_to_open(tmp_path: Path) -> None:
    bogus = tmp_path / "clip.avi"
    bogus.write_bytes(b"this is not a video" * 100)
    source = open_source(str(bogus), clock_now=time.monotonic)
    with pytest.raises(SourceError) as err:
        source.open()
    assert str(bogus) in str(err.value) and "\n" not in str(err.value)


def test_picamera2_missing_is_a_clear_error() -> None:
    try:
        import picamera2  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("picamera2 is installed here")
    with pytest.raises(SourceUnavailable, match=r"picamera2 is not installed \(apt install"):
        Picamera2Source(clock_now=time.monotonic).open()


# ------------------------------------------------------------------ files


async def test_vtest_every_frame_in_order_then_ended() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    runner = SourceRunner(
        open_source(str(data_file("vtest.avi")), clock_now=clock.now), clock=clock, on_state=rec
    )
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)  # returns at once for files
    frames: list[Frame] = []
    with anyio.fail_after(GUARD_S * 2):
        while (frame := await runner.next_frame()) is not None:
            frames.append(frame)
    assert [f.index for f in frames] == list(range(795))
    assert frames[0].t_media == 0.0
    assert np.allclose(np.diff([f.t_media for f in frames]), 0.1)
    assert frames[0].image.shape == (576, 768, 3) and frames[0].image.dtype == np.uint8
    assert rec.states == [S.OPENING, S.RUNNING, S.ENDED]
    assert rec.threads == {threading.get_ident()}
    assert runner.stats.frames_read == 795 and runner.stats.read_errors == 0
    assert await runner.next_frame() is None
    await runner.close()
    await runner.close()
    assert rec.states == [S.OPENING, S.RUNNING, S.ENDED]


async def test_vtest_loop_keeps_time_and_index_increasing() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    source = open_source(str(data_file("vtest.avi")), clock_now=clock.now)
    runner = SourceRunner(source, clock=clock, on_state=rec, loop=True)
    frames = [await next_frame(runner) for _ in range(800)]
    await runner.close()
    assert [f.index for f in frames] == list(range(800))
    assert all(b.t_media > a.t_media for a, b in itertools.pairwise(frames))
    assert frames[795].t_media == pytest.approx(79.5)
    assert frames[799].t_media == pytest.approx(79.9)
    assert np.array_equal(frames[795].image, frames[0].image)
    # The wrap is said (a loop that starts over is not a frozen clip), once per pass.
    assert rec.states == [S.OPENING, S.RUNNING, S.RUNNING, S.ENDED]
    assert rec.changes[2].reason.startswith("loop pass 2 from the start")
    assert rec.changes[-1].reason == "closed"


def test_opencv_file_seek_and_end() -> None:
    source = OpenCVSource(str(data_file("vtest.avi")), clock_now=time.monotonic)
    source.open()
    try:
        assert source.fps == pytest.approx(10.0)
        source.seek(790)
        frame = source.read()
        assert frame is not None and frame.index == 790 and frame.t_media == pytest.approx(79.0)
        assert [f.index for f in iter(source.read, None)] == [791, 792, 793, 794]
        assert source.read() is None
    finally:
        source.close()
        source.close()
    with pytest.raises(SourceError, match="not open"):
        source.read()


async def test_image_folder_sorted_at_fps_skipping_a_corrupt_image(tmp_path: Path) -> None:
    for number, value in [(1, 10), (2, 20), (10, 100)]:
        cv2.imwrite(str(tmp_path / f"frame_{number}.png"), np.full((6, 8, 3), value, np.uint8))
    (tmp_path / "frame_3.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (tmp_path / "README.txt").write_text("ignored")
    clock = FakeClock()
    rec = Recorder(clock)
    runner = SourceRunner(
        open_source(str(tmp_path), clock_now=clock.now, folder_fps=2.0), clock=clock, on_state=rec
    )
    frames = []
    with anyio.fail_after(GUARD_S):
        while (frame := await runner.next_frame()) is not None:
            frames.append(frame)
    assert [(f.index, f.t_media, int(f.image[0, 0, 0])) for f in frames] == [
        (0, 0.0, 10),
        (1, 0.5, 20),
        (3, 1.5, 100),
    ]
    assert runner.stats.skipped_unreadable == 1
    assert rec.states == [S.OPENING, S.RUNNING, S.ENDED]


async def test_image_folder_loop_counts_skipped_slots(tmp_path: Path) -> None:
    for name in ("a.png", "b.png"):
        cv2.imwrite(str(tmp_path / name), np.zeros((4, 4, 3), np.uint8))
    (tmp_path / "c.jpg").write_bytes(b"garbage")
    clock = FakeClock()
    runner = SourceRunner(ImageFolderSource(tmp_path, fps=1.0), clock=clock, loop=True)
    frames = [await next_frame(runner) for _ in range(5)]
    await runner.close()
    assert [(f.index, f.t_media) for f in frames] == [
        (0, 0.0),
        (1, 1.0),
        (3, 3.0),
        (4, 4.0),
        (6, 6.0),
    ]
    assert runner.stats.skipped_unreadable == 2


def test_image_folder_names_the_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").write_bytes(b"garbage")
    cv2.imwrite(str(tmp_path / "b.png"), np.zeros((4, 4, 3), np.uint8))
    source = ImageFolderSource(tmp_path)
    source.open()
    with pytest.raises(UnreadableFrame, match=r"cannot read image .*a\.jpg") as err:
        source.read()
    assert err.value.index == 0
    frame = source.read()
    assert frame is not None and frame.index == 1 and frame.t_media == 1.0
    assert source.read() is None


async def test_file_read_error_reopens_and_resumes_at_the_next_frame() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    source = FakeFile(12, fail_at={5: 2})
    runner = SourceRunner(source, clock=clock, on_state=rec)
    frames: list[Frame] = []

    async def consume() -> None:
        while (frame := await runner.next_frame()) is not None:
            frames.append(frame)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        first = await rec.wait(S.RECONNECTING, 1)
        assert first.attempt == 1 and "cannot decode frame 5" in first.reason
        await advance(clock, 0.5)
        second = await rec.wait(S.RECONNECTING, 2)
        assert second.attempt == 2
        await advance(clock, 1.0)
    assert [f.index for f in frames] == list(range(12))
    assert source.seeks == [5, 5]
    assert source.opens == 3
    assert rec.states == [S.OPENING, S.RUNNING, S.RECONNECTING, S.RECONNECTING, S.RUNNING, S.ENDED]
    assert rec.times[2:5] == [0.0, 0.5, 1.5]
    assert runner.stats.read_errors == 2 and runner.stats.reopens == 2
    assert source.on_loop_thread == []


async def test_file_fails_after_max_consecutive_failures() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    source = FakeFile(12, fail_at={3: -1})
    runner = SourceRunner(source, clock=clock, on_state=rec, max_file_failures=3)
    frames: list[Frame] = []
    failure: list[SourceError] = []

    async def consume() -> None:
        try:
            while (frame := await runner.next_frame()) is not None:
                frames.append(frame)
        except SourceError as exc:
            failure.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await rec.wait(S.RECONNECTING, 1)
        await advance(clock, 0.5)
        await rec.wait(S.RECONNECTING, 2)
        await advance(clock, 1.0)
    assert [f.index for f in frames] == [0, 1, 2]
    assert rec.states[-1] is S.FAILED and rec.changes[-1].attempt == 3
    assert len(failure) == 1
    message = str(failure[0])
    assert "cannot decode frame 3" in message and "3 failures in a row" in message
    assert "\n" not in message
    with pytest.raises(SourceError):
        await runner.next_frame()
    assert not source.opened


# ------------------------------------------------------------------ live: real OpenCV


async def test_missing_webcam_keeps_reconnecting_with_growing_backoff() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    source = open_source("9", clock_now=clock.now)
    runner = SourceRunner(source, clock=clock, on_state=rec, max_backoff_s=2.0)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        for attempt, delay in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 2.0)]:
            change = await rec.wait(S.RECONNECTING, attempt)
            assert change.attempt == attempt
            assert "cannot open camera 9" in change.reason
            assert f"retry in {delay:g} s" in change.reason
            await advance(clock, delay)
        await rec.wait(S.RECONNECTING, 5)
        await runner.close()
    assert rec.times[1:6] == [0.0, 0.5, 1.5, 3.5, 5.5]
    assert rec.states[0] is S.OPENING and rec.states[-1] is S.ENDED


async def test_refused_stream_url_fails_fast_and_reconnects() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    port = closed_port()
    source = open_source(
        f"rtsp://viewer:s3cret@127.0.0.1:{port}/live", clock_now=clock.now, open_timeout_s=2.0
    )
    runner = SourceRunner(source, clock=clock, on_state=rec)
    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        change = await rec.wait(S.RECONNECTING, 1)
        await runner.close()
    # Far below FFmpeg's own waits (tens of seconds); the rest is for a busy CPU.
    assert time.monotonic() - started < 10
    assert f"cannot open stream rtsp://127.0.0.1:{port}/live" in change.reason
    assert all("s3cret" not in c.reason for c in rec.changes)


def test_silent_stream_server_open_times_out(silent_server: int) -> None:
    source = OpenCVSource(
        f"rtsp://127.0.0.1:{silent_server}/live", clock_now=time.monotonic, open_timeout_s=0.5
    )
    started = time.monotonic()
    with pytest.raises(SourceError, match="cannot open stream"):
        source.open()
    assert time.monotonic() - started < 10  # FFmpeg alone would wait for ever; room for a busy CPU


def test_stalled_stream_read_times_out(mjpeg_that_stalls: str) -> None:
    source = OpenCVSource(
        mjpeg_that_stalls, clock_now=time.monotonic, open_timeout_s=2.0, read_timeout_s=0.5
    )
    source.open()
    try:
        frames = [source.read() for _ in range(3)]
        assert [f.index for f in frames if f is not None] == [0, 1, 2]
        started = time.monotonic()
        with pytest.raises(SourceError, match="no frame"):
            source.read()
        assert time.monotonic() - started < 10  # a stalled read alone never returns
    finally:
        source.close()


async def test_picamera2_missing_fails_the_runner() -> None:
    try:
        import picamera2  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("picamera2 is installed here")
    clock = FakeClock()
    rec = Recorder(clock)
    runner = SourceRunner(Picamera2Source(clock_now=clock.now), clock=clock, on_state=rec)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await rec.wait(S.FAILED)
    with pytest.raises(SourceError, match="picamera2 is not installed"):
        await runner.next_frame()
    assert rec.states == [S.OPENING, S.FAILED]


# ------------------------------------------------------------------ live: fake camera


async def test_live_keeps_only_the_newest_frame() -> None:
    clock = FakeClock()
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        first = await next_frame(runner)
        assert await in_thread(lambda t: camera.wait_served(first.index + 7, t))
        newer = await next_frame(runner)
        assert newer.index >= first.index + 5
        again = await next_frame(runner)
        assert again.index > newer.index
        await runner.close()
    assert runner.state is S.ENDED
    assert camera.on_loop_thread == []


async def test_live_read_errors_reconnect_then_frames_resume() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock, on_state=rec)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        before = await next_frame(runner)
        camera.read_failures = 3
        for attempt, delay in [(1, 0.5), (2, 1.0), (3, 2.0)]:
            change = await rec.wait(S.RECONNECTING, attempt)
            assert change.attempt == attempt and "read failed" in change.reason
            await advance(clock, delay)
        await rec.wait(S.RUNNING, 2)
        after = await next_frame(runner)
        await runner.close()
    assert after.index > before.index
    assert int(after.image[0, 0, 0]) == 4  # the fourth capture
    assert rec.states == [S.OPENING, S.RUNNING, *[S.RECONNECTING] * 3, S.RUNNING, S.ENDED]
    assert runner.stats.read_errors == 3 and runner.stats.reopens == 3
    assert all(c.released.is_set() and not c.released_while_reading for c in camera.captures)
    assert rec.threads == {threading.get_ident()}
    assert camera.on_loop_thread == []


async def test_camera_unplugged_then_back() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock, on_state=rec, max_backoff_s=2.0)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await next_frame(runner)
        camera.unplugged = True
        delays = [0.5, 1.0, 2.0, 2.0, 2.0]
        for attempt, delay in enumerate(delays, start=1):
            change = await rec.wait(S.RECONNECTING, attempt)
            assert change.attempt == attempt
            if attempt > 1:
                assert "cannot open fake camera" in change.reason
            if attempt == len(delays):
                camera.unplugged = False
            await advance(clock, delay)
        await rec.wait(S.RUNNING, 2)
        frame = await next_frame(runner)
        await runner.close()
    assert int(frame.image[0, 0, 0]) == 2  # a fresh capture after the failed opens
    assert np.allclose(np.diff(camera.open_times), delays)
    assert runner.stats.reopens == 1


async def test_a_camera_away_for_long_is_counted_again_within_seconds_of_its_return(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Away for 45 s (longer than a backoff that grows to 30 s): its frames come again
    within a few seconds of its return, and the two dozen failed opens meanwhile are
    said in a few lines, not one each."""
    caplog.set_level(logging.INFO, "lookout.source")
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock, on_state=rec)  # the defaults a run uses
    back_at = 45.0
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await next_frame(runner)
        camera.unplugged = True
        attempt = 0
        while camera.unplugged:
            attempt += 1
            change = await rec.wait(S.RECONNECTING, attempt)
            await settle()  # asleep until its next try
            retry = clock.now() + float(change.reason.rsplit("retry in ", 1)[1].split()[0])
            if retry >= back_at:
                clock.set(back_at)
                camera.unplugged = False
            clock.set(retry)
        await rec.wait(S.RUNNING, 2)
        back = rec.times[rec.states.index(S.RUNNING, 2)]
        await runner.close()
    assert back - back_at <= 3.0, f"counted again {back - back_at:.1f} s after its return"
    assert attempt >= 20  # tried every couple of seconds while away ...
    said = [r.getMessage() for r in caplog.records if "reconnecting" in r.getMessage()]
    # ... and said at its 1st, the first failed open, and the 10th: not at each.
    assert len(said) == 3, said
    assert "(10 failures in a row over " in said[-1], said
    assert [c.attempt for c in rec.changes if c.said and c.state is S.RECONNECTING] == [1, 2, 10]
    running = [r.getMessage() for r in caplog.records if "running" in r.getMessage()][-1]
    assert f"after {attempt} failed attempts in a row over " in running, running


async def test_next_frame_waits_through_reconnects_and_can_be_cancelled() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    camera.unplugged = True
    runner = SourceRunner(camera, clock=clock, on_state=rec)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        await rec.wait(S.RECONNECTING, 1)
        got: list[Frame | None] = []
        waiting = anyio.CancelScope()
        finished = anyio.Event()

        async def wait_for_frame() -> None:
            with waiting:
                got.append(await runner.next_frame())
            finished.set()

        tg.start_soon(wait_for_frame)
        await settle()
        waiting.cancel()
        with anyio.fail_after(GUARD_S):
            await finished.wait()
        assert got == []
        assert runner.state is S.RECONNECTING
        camera.unplugged = False
        await advance(clock, 0.5)
        frame = await next_frame(runner)
        await runner.close()
    assert frame.index == 0


async def test_stalled_read_is_abandoned_and_a_fresh_capture_takes_over() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock, on_state=rec, stall_timeout_s=5.0)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(runner.run)
            await next_frame(runner)
            camera.block_next_read = True
            assert await in_thread(camera.blocked.wait)
            await advance(clock, 5.0)
            change = await rec.wait(S.RECONNECTING, 1)
            assert "no frame within 5 s" in change.reason
            stuck = camera.captures[0]
            assert runner.stats.stalls == 1
            assert not stuck.released.is_set()  # still inside read(): not ours to release
            await advance(clock, 0.5)
            await rec.wait(S.RUNNING, 2)
            frame = await next_frame(runner)
            assert int(frame.image[0, 0, 0]) == 2
            camera.unblock.set()
            assert await in_thread(stuck.released.wait)
            await runner.close()
    finally:
        camera.unblock.set()
    assert not stuck.released_while_reading
    assert stuck.reads_after_release == 0
    assert rec.states == [S.OPENING, S.RUNNING, S.RECONNECTING, S.RUNNING, S.ENDED]


async def test_close_during_a_blocked_read_returns_at_once() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock)
    runner = SourceRunner(camera, clock=clock, on_state=rec)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(runner.run)
            await next_frame(runner)
            camera.block_next_read = True
            assert await in_thread(camera.blocked.wait)
            started = time.monotonic()
            with anyio.fail_after(GUARD_S):
                await runner.close()
            assert time.monotonic() - started < 1.0
        # The reader task has ended even though the read itself has not.
        stuck = camera.captures[0]
        assert not stuck.released.is_set()
        assert await runner.next_frame() is None
        camera.unblock.set()
        assert await in_thread(stuck.released.wait)
    finally:
        camera.unblock.set()
    assert not stuck.released_while_reading
    assert rec.states[-1] is S.ENDED and rec.changes[-1].reason == "closed"
    await runner.close()


async def test_resolution_change_mid_stream_is_counted() -> None:
    clock = FakeClock()
    rec = Recorder(clock)
    camera = FakeCamera(clock, shape=(48, 64))
    runner = SourceRunner(camera, clock=clock, on_state=rec)
    async with anyio.create_task_group() as tg:
        await tg.start(runner.run)
        small = await next_frame(runner)
        camera.shape = (72, 96)
        with anyio.fail_after(GUARD_S):
            while (frame := await next_frame(runner)).image.shape[:2] != (72, 96):
                pass
        after = await next_frame(runner)
        await runner.close()
    assert small.image.shape == (48, 64, 3) and after.image.shape == (72, 96, 3)
    assert runner.stats.resolution_changes == 1
    assert S.RECONNECTING not in rec.states
    assert frame.index > small.index


def test_picamera2_built_for_another_numpy_is_said_once_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins

    real_import = builtins.__import__

    def broken(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "picamera2":
            raise ValueError(
                "numpy.dtype size changed, may indicate binary incompatibility. Expected 96"
            )
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    source = open_source("picamera2", clock_now=lambda: 0.0)
    with pytest.raises(
        SourceUnavailable, match=r"another numpy; \.venv/bin/pip install simplejpeg"
    ):
        source.open()
