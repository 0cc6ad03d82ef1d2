"""An MJPEG camera over HTTP is read by Lookout itself: a frame's size is read from its
JPEG header before it is decoded, each read has a time limit, each part a size cap.

Through FFmpeg (OpenCV's HTTP reader), a camera sending 10000x10000 frames had each one
decoded whole (RSS swung between 1.5 and 4.3 GB) and frames bigger than the first were
silently scaled down. The real test camera (tests/mjpeg_camera.py) serves real JPEGs.
"""

from __future__ import annotations

import http.server
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from device.sources import OpenCVSource, SourceError, UnreadableFrame
from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.mjpeg_camera import MjpegCamera, vtest_jpegs

pytestmark = pytest.mark.slow


def jpeg(height: int, width: int) -> bytes:
    # Grey: a third of the memory to make (a JPEG decoded as colour all the same).
    ok, data = cv2.imencode(".jpg", np.full((height, width), 90, np.uint8))
    assert ok
    return data.tobytes()


def claiming(data: bytes, height: int, width: int) -> bytes:
    """A JPEG whose frame header (SOF0) says ``width`` x ``height``: what a decoder
    allocates for, whatever follows."""
    at = data.index(b"\xff\xc0")
    return data[: at + 5] + struct.pack(">HH", height, width) + data[at + 9 :]


@pytest.fixture
def camera() -> Iterator[MjpegCamera]:
    small = vtest_jpegs(2)
    huge = claiming(small[0], 30_000, 30_000)  # 900 megapixels: too big even at 1/8
    big = jpeg(2000, 3000)  # 6 megapixels: decoded at 1/4 under a 1-megapixel limit
    cam = MjpegCamera([small[0], huge, small[1], big], fps=50).start()
    yield cam
    cam.stop()


def test_a_frame_over_the_limit_is_refused_from_its_header_or_decoded_smaller(
    camera: MjpegCamera,
) -> None:
    source = OpenCVSource(camera.url, clock_now=time.monotonic, read_timeout_s=5)
    source.max_pixels = 1_000_000
    source.open()
    try:
        shapes: list[tuple[int, ...]] = []
        refused: list[str] = []
        while len(shapes) < 6:
            try:
                frame = source.read()
            except UnreadableFrame as exc:
                refused.append(str(exc))
                continue
            assert frame is not None
            shapes.append(frame.image.shape)
    finally:
        source.close()
    assert refused and all(
        reason.endswith(
            " not decoded: 30000x30000 is 900 megapixels, too large even at 1/8 size for the "
            "limit of 1 (--max-image-pixels)"
        )
        for reason in refused
    ), refused
    assert (576, 768, 3) in shapes and (500, 750, 3) in shapes  # the 3000x2000 at 1/4


def serve_once(
    answer: bytes, then: bytes = b"", every_s: float = 0.0
) -> tuple[str, threading.Event]:
    """A server that answers one GET with ``answer``, then ``then`` byte by byte every
    ``every_s`` (for at most 10 s), then holds the connection until told to stop."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(answer)
            for byte in then[: int(10 / every_s) if every_s else 0]:
                if stop.wait(every_s):
                    break
                conn.sendall(bytes([byte]))
            stop.wait(10)
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}/video", stop


HEAD = b"HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=b\r\n\r\n"


def part(data: bytes, *, length: bool = True) -> bytes:
    size = b"Content-Length: %d\r\n" % len(data) if length else b""
    return b"--b\r\nContent-Type: image/jpeg\r\n" + size + b"\r\n" + data + b"\r\n"


def test_a_part_over_the_size_cap_is_skipped_unread_and_the_stream_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("device.sources.mjpeg.PART_MAX", 100_000)
    small = jpeg(48, 64)
    parts = part(small) + part(bytes(150_000)) + part(small, length=False) + b"--b\r\n"
    url, stop = serve_once(HEAD + parts)
    source = OpenCVSource(url, clock_now=time.monotonic, read_timeout_s=0.5)
    source.open()
    try:
        first = source.read()
        with pytest.raises(UnreadableFrame, match=r"frame 1 is 150 KB, over the limit of 100 KB"):
            source.read()
        third = source.read()  # no length given: read up to the next delimiter
        # The camera says nothing more: a stalled camera, said within the read timeout.
        with pytest.raises(SourceError, match="no frame"):
            source.read()
    finally:
        stop.set()
        source.close()
    assert first is not None and third is not None
    assert first.image.shape == third.image.shape == (48, 64, 3)


def test_a_camera_that_drips_bytes_is_a_stalled_camera_within_the_read_timeout() -> None:
    """Every socket read gets a byte in time; the frame never comes whole."""
    url, stop = serve_once(HEAD, then=part(jpeg(48, 64)), every_s=0.05)
    source = OpenCVSource(url, clock_now=time.monotonic, read_timeout_s=0.5)
    source.open()
    started = time.monotonic()
    try:
        with pytest.raises(SourceError, match=r"no whole frame in 0.5 s"):
            source.read()
    finally:
        stop.set()
        source.close()
    assert time.monotonic() - started < 3


def test_a_password_is_sent_only_to_a_camera_that_asks_for_basic_authentication() -> None:
    """Sent unasked over plain HTTP, a password could be read on the way to a camera that
    would have taken Digest (FFmpeg's answer to it, as before)."""
    frame = jpeg(48, 64)
    asked: list[str | None] = []

    class Camera(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.headers.get("Authorization"))
            if self.headers.get("Authorization") != "Basic dmlld2VyOnMzY3JldA==":
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="cam"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=b")
            self.end_headers()
            self.wfile.write(part(frame) * 2)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Camera)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://viewer:s3cret@127.0.0.1:{server.server_address[1]}/video.mjpg"
    source = OpenCVSource(url, clock_now=time.monotonic, read_timeout_s=2)
    try:
        source.open()
        first = source.read()
    finally:
        source.close()
        server.shutdown()
        server.server_close()
    assert first is not None and first.image.shape == (48, 64, 3)
    assert asked == [None, "Basic dmlld2VyOnMzY3JldA=="]  # asked first, then answered


def test_an_http_answer_that_is_not_mjpeg_is_left_to_ffmpeg(tmp_path: Path) -> None:
    """A video file over HTTP: not multipart, so OpenCV reads it as it always did."""
    folder = data_file("vtest.avi").parent

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/vtest.avi"
    from device.sources.mjpeg import MjpegStream

    try:
        assert MjpegStream.connect(url, name=url, open_timeout_s=5, read_timeout_s=5) is None
        source = OpenCVSource(url, clock_now=time.monotonic)
        source.open()
        try:
            frame = source.read()
        finally:
            source.close()
    finally:
        server.shutdown()
        server.server_close()
    assert frame is not None and frame.image.shape == (576, 768, 3)


BIG_RSS_MB = 1000  # a run reading 10000x10000 frames stays under this (it took 3.7 GB)

# Runs the command as its only child: that child's peak RSS, in KB, is the last line.
PEAK = """
import resource, subprocess, sys
limit = 6_000_000_000  # a regression fails the run (MemoryError), not the machine
def capped():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
code = subprocess.run(sys.argv[1:], preexec_fn=capped).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_a_camera_of_10000x10000_frames_runs_in_bounded_memory(tmp_path: Path) -> None:
    """The issue's case, through the CLI: each 100-megapixel frame is decoded at 1/2 size
    (the default limit is 50), never whole; the run's peak RSS is measured."""
    camera = MjpegCamera([jpeg(10_000, 10_000)], fps=5).start()
    (tmp_path / "empty.toml").write_text("")
    run = [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--model", "local",
           "--no-http", "--source", camera.url, "--duration", "2"]  # fmt: skip
    try:
        done = subprocess.run(
            [sys.executable, "-c", PEAK, *run],
            cwd=REPO_ROOT, env=offline_env(), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    finally:
        camera.stop()
    *said, last = done.stdout.splitlines()
    code, peak_kb = (int(x) for x in last.split())
    assert code == 0, done.stderr[-3000:]
    assert peak_kb / 1024 < BIG_RSS_MB, f"peak RSS {peak_kb / 1024:.0f} MB"
    assert "Traceback" not in done.stdout + done.stderr
    assert any("running: 5000x5000 frames" in line for line in said), said[-20:]
