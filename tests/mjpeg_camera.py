"""A network camera for tests and benchmarks: real vtest frames as MJPEG over HTTP.

``lookout run --source http://127.0.0.1:PORT/stream.mjpg`` reads it through
OpenCV (FFmpeg's multipart demuxer), as it would an IP camera. ``outage()``
takes it off the network (open streams end, new connections are refused) and
``restore()`` brings it back on the same port: a camera that is unplugged and
plugged in again.
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cv2

from tests.datafiles import data_file

BOUNDARY = "fakecamframe"


def vtest_jpegs(n: int = 100, every: int = 1) -> list[bytes]:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    jpegs: list[bytes] = []
    index = 0
    try:
        while len(jpegs) < n:
            ok, frame = cap.read()
            if not ok:
                break
            if index % every == 0:
                ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 80])
                assert ok
                jpegs.append(data.tobytes())
            index += 1
    finally:
        cap.release()
    return jpegs


class MjpegCamera:
    def __init__(self, jpegs: list[bytes], fps: float = 10.0, port: int = 0) -> None:
        self.jpegs = jpegs
        self.interval_s = 1.0 / fps
        self.port = port
        self.streams_served = 0
        self._up = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/stream.mjpg"

    def start(self) -> MjpegCamera:
        camera = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/stream.mjpg":
                    self.send_error(404)
                    return
                camera.streams_served += 1
                self.send_response(200)
                self.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
                self.end_headers()
                index = 0
                try:
                    while camera._up.is_set():
                        jpeg = camera.jpegs[index % len(camera.jpegs)]
                        head = (
                            f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\n"
                            f"Content-Length: {len(jpeg)}\r\n\r\n"
                        )
                        self.wfile.write(head.encode() + jpeg + b"\r\n")
                        index += 1
                        time.sleep(camera.interval_s)  # the camera's own frame rate
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._up.set()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def outage(self) -> None:
        """Off the network: streams end, connections are refused."""
        self._up.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def restore(self) -> None:
        """Back on the same port."""
        for _ in range(50):
            try:
                self.start()
                return
            except OSError:
                time.sleep(0.1)  # the port is released a moment after the close
        raise RuntimeError(f"port {self.port} did not come free")

    def stop(self) -> None:
        self.outage()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


__all__ = ["MjpegCamera", "vtest_jpegs"]
