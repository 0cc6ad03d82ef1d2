"""MJPEG over HTTP read by Lookout itself, so a frame's size is known before it is decoded.

OpenCV hands an ``http://`` camera to FFmpeg, which decodes every JPEG whole inside
``grab()``: a camera sending 10000x10000 frames cost 150 to 300 MB per frame before
any check could run (RSS swung between 1.5 and 4.3 GB), and frames larger than the
first were silently scaled down to its size. Here the stream is read part by part
(``multipart/x-mixed-replace``, what IP cameras, ``mjpg-streamer`` and ESP32 boards
send), each part is only bytes until it is wanted, and a wanted part's size is read
from its JPEG header first (``image_limit.decode_jpeg``: decoded smaller, or refused).
An answer that is not such a stream (H.264 over HTTP, HLS, a redirect, a camera that
asks for digest authentication) is left to FFmpeg as before.

Bounded everywhere: each socket read has the read timeout, a whole part has it too
(a camera that drips bytes is a stalled camera), a part has at most ``PART_MAX``
bytes and its headers a few KB.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import time
from collections.abc import Callable
from urllib.parse import SplitResult, unquote, urlsplit

import numpy as np

from device.files.input_file import MB, size_text
from device.sources.base import SourceError
from device.sources.image_limit import DEFAULT_MAX_PIXELS, TooLarge, decode_jpeg
from device.sources.pixels import FrameTooLarge

PART_MAX = 64 * MB  # one JPEG: a 50-megapixel one at the highest quality is about 25 MB
_LINE_MAX = 8192  # a header line, or a line before the first boundary
_HEADERS_MAX = 32  # header lines a part may have
_READ = 65536


class MjpegStream:
    """An open ``multipart/x-mixed-replace`` HTTP stream, with OpenCV's capture methods
    that ``OpenCVSource`` uses (``grab``, ``retrieve``, ``release``, ``get``)."""

    def __init__(
        self,
        connection: http.client.HTTPConnection,
        answer: http.client.HTTPResponse,
        boundary: bytes,
        *,
        name: str,
        read_timeout_s: float,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._connection = connection
        self._answer = answer
        self._boundary = boundary
        self.name = name
        self._read_timeout_s = read_timeout_s
        self.max_pixels = DEFAULT_MAX_PIXELS  # set by the source (--max-image-pixels)
        self._now = now
        self._buffer = bytearray()
        self._deadline = 0.0
        self._part: bytes | None = None
        self._skipped: str | None = None  # why the grabbed part is not decoded

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        name: str,
        open_timeout_s: float,
        read_timeout_s: float,
    ) -> MjpegStream | None:
        """The stream at ``url`` when it answers with one; None for anything else (the
        connection closed again). Raises ``SourceError`` when it cannot be reached.

        The URL's password is sent only when the camera asks for Basic authentication (as
        FFmpeg does); a camera asking for Digest is left to FFmpeg, which answers it."""
        parts = urlsplit(url)
        opened = _get(parts, None, name, open_timeout_s)
        if opened is None:
            return None
        connection, answer, sock = opened
        challenge = answer.getheader("WWW-Authenticate", "")
        if answer.status == 401 and parts.username and challenge.lower().startswith("basic"):
            connection.close()
            user = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            basic = "Basic " + base64.b64encode(user.encode()).decode()
            opened = _get(parts, basic, name, open_timeout_s)
            if opened is None:
                return None
            connection, answer, sock = opened
        kind_of, _, params = answer.getheader("Content-Type", "").partition(";")
        boundary = _boundary(params)
        if answer.status != 200 or kind_of.strip().lower() != "multipart/x-mixed-replace":
            connection.close()
            return None
        if boundary is None:
            connection.close()
            raise SourceError(f"cannot open stream {name}: a multipart answer without a boundary")
        if sock is not None:
            sock.settimeout(read_timeout_s)
        return cls(connection, answer, boundary, name=name, read_timeout_s=read_timeout_s)

    # What OpenCVSource calls ---------------------------------------------------

    def isOpened(self) -> bool:  # cv2.VideoCapture's name
        return True

    def get(self, prop: int) -> float:
        return 0.0  # no frame rate, no frame count: a camera's frames come when they come

    def grab(self) -> bool:
        """The next part, kept as bytes (not decoded). Raises ``SourceError`` when the stream
        ends, stalls for the read timeout or breaks."""
        self._deadline = self._now() + self._read_timeout_s
        try:
            self._part, self._skipped = self._next_part()
        except (OSError, http.client.HTTPException) as exc:
            raise SourceError(f"{self.name}: no frame ({_why(exc)})") from None
        return True

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        """The grabbed part's pixels, its size read first. Raises ``FrameTooLarge`` for a
        part over the limits; (False, None) for one that is not a JPEG."""
        part, skipped = self._part, self._skipped
        self._part = self._skipped = None
        if skipped is not None:
            raise FrameTooLarge(skipped)
        if part is None:
            return False, None
        try:
            image = decode_jpeg(part, self.max_pixels, self.name)
        except TooLarge as exc:
            raise FrameTooLarge(f"not decoded: {exc}") from None
        return image is not None, image

    def release(self) -> None:
        self._connection.close()

    # The multipart stream ------------------------------------------------------

    def _next_part(self) -> tuple[bytes | None, str | None]:
        """(the next part's bytes, None), or (None, why) for a part too big to keep."""
        self._to_boundary()
        length: int | None = None
        for _ in range(_HEADERS_MAX):
            line = self._line()
            if not line.strip():
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip()) if value.strip().isdigit() else None
        else:
            raise SourceError(f"{self.name}: a part with over {_HEADERS_MAX} header lines")
        if length is None:
            return self._until_boundary(), None
        if length > PART_MAX:
            self._discard(length)
            return None, f"is {size_text(length)}, over the limit of {size_text(PART_MAX)}"
        return self._exactly(length), None

    def _to_boundary(self) -> None:
        """Past the next delimiter line (what comes before it is the last part's end)."""
        skipped = 0
        while True:
            line = self._line().strip()
            core = line.lstrip(b"-")  # "--" and the boundary, or more dashes (_boundary)
            if line.startswith(b"--") and core == self._boundary:
                return
            if line.startswith(b"--") and core == self._boundary + b"--":
                raise SourceError(f"{self.name}: the stream ended")
            skipped += len(line)
            if skipped > _LINE_MAX:
                raise SourceError(f"{self.name}: not an MJPEG stream (no part delimiter)")

    def _until_boundary(self) -> bytes:
        """A part without a length: up to the next delimiter line, left to be read."""
        marker = b"--" + self._boundary
        start = 0
        while True:
            found = self._buffer.find(marker, start)
            if found >= 0:
                line = self._buffer.rfind(b"\n", 0, found)
                if line >= 0 and not self._buffer[line + 1 : found].strip(b"-"):
                    end = line - 1 if line and self._buffer[line - 1] == 0x0D else line
                    part = bytes(self._buffer[:end])
                    del self._buffer[: line + 1]
                    return part
                start = found + 1  # the boundary's bytes inside the JPEG: go on
                continue
            if len(self._buffer) > PART_MAX:
                raise SourceError(
                    f"{self.name}: a part over {size_text(PART_MAX)} (no delimiter found)"
                )
            start = max(0, len(self._buffer) - len(marker))
            self._fill()

    def _line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > _LINE_MAX:
                raise SourceError(f"{self.name}: a line over {_LINE_MAX} bytes in the stream")
            self._fill()

    def _exactly(self, length: int) -> bytes:
        while len(self._buffer) < length:
            self._fill()
        part = bytes(self._buffer[:length])
        del self._buffer[:length]
        return part

    def _discard(self, length: int) -> None:
        while length > len(self._buffer):
            length -= len(self._buffer)
            self._buffer.clear()
            self._fill()
        del self._buffer[:length]

    def _fill(self) -> None:
        if self._now() > self._deadline:
            raise SourceError(f"{self.name}: no whole frame in {self._read_timeout_s:g} s")
        data = self._answer.read1(_READ)
        if not data:
            raise SourceError(f"{self.name}: the stream ended")
        self._buffer += data


def _get(
    parts: SplitResult, authorization: str | None, name: str, timeout_s: float
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, socket.socket | None] | None:
    """GET the URL: the connection, its answer and its socket; None where FFmpeg should
    try instead (a certificate this machine does not trust)."""
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError as exc:  # a port that is not a number
        raise SourceError(f"cannot open stream {name}: {exc}") from None
    connection = (
        http.client.HTTPSConnection(
            host, port, timeout=timeout_s, context=ssl.create_default_context()
        )
        if parts.scheme.lower() == "https"
        else http.client.HTTPConnection(host, port, timeout=timeout_s)
    )
    headers = {"Accept": "multipart/x-mixed-replace, */*"}
    if authorization is not None:
        headers["Authorization"] = authorization
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("GET", target, headers=headers)
        sock = connection.sock  # the answer takes it over (an HTTP/1.0 answer's own)
        return connection, connection.getresponse(), sock
    except ssl.SSLError:
        # A camera's own certificate, most likely: FFmpeg takes it (as it always did).
        connection.close()
        return None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        connection.close()
        raise SourceError(f"cannot open stream {name}: {_why(exc)}") from None


def _boundary(params: str) -> bytes | None:
    """The boundary without its leading dashes: cameras disagree on how many there are
    (some put the delimiter's two in the parameter too), so delimiter lines are matched
    by what follows the dashes."""
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        boundary = value.strip().strip('"').lstrip("-")
        if name.strip().lower() == "boundary" and boundary:
            return boundary.encode("latin-1")
    return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    return str(getattr(exc, "strerror", None) or exc or type(exc).__name__)


__all__ = ["PART_MAX", "MjpegStream"]
