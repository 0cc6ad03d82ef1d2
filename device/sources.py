"""Frame sources: webcams, video files, network streams, image folders, the Pi camera.

Every method here blocks (a camera read can take as long as the camera wants),
so the async side calls them from worker threads only; see
``device.source_runner``. A source knows nothing about retries: it opens,
reads, seeks and closes, and says plainly what went wrong.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

import cv2
import numpy as np

from live.frame import Frame
from live.redact import safe_url

log = logging.getLogger("lookout.source")

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp"})
STREAM_SCHEMES = frozenset(
    {"rtsp", "rtsps", "rtmp", "rtmps", "http", "https", "udp", "tcp", "rtp", "srt", "mms"}
)
PICAMERA_SPECS = frozenset({"picam", "picamera", "picamera2"})
_URL_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*)://")


class SourceError(Exception):
    """A source failed; the message is one line naming the source and the problem."""


class UnreadableFrame(SourceError):
    """One frame could not be decoded; the source has already moved past it."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


class SourceUnavailable(SourceError):
    """Retrying cannot help (a library or driver is missing)."""


class FrameSource(Protocol):
    """What the runner needs from a source.

    ``close()`` may be called from another thread while ``read()`` is blocked
    in it. It must then return at once without touching the capture that is
    being read: the reading thread releases that capture when its read
    finally returns, and a later ``open()`` works on a fresh capture. This is
    what lets the runner abandon a stalled network read and reconnect.
    """

    name: str  # for people and logs; never contains credentials
    live: bool  # camera or stream (frames are dropped when late) vs file or folder (every frame)
    fps: float | None

    def open(self) -> None: ...

    def read(self) -> Frame | None:
        """The next frame; ``None`` at the end of a file. Raises SourceError."""
        ...

    def seek(self, index: int) -> None:
        """Make ``index`` the next frame read (files and folders only)."""
        ...

    def close(self) -> None: ...


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def decode_image(data: bytes) -> np.ndarray | None:
    """An encoded image (JPEG, PNG, BMP) as BGR, or None when it cannot be decoded."""
    if not data:
        return None
    try:
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        return None
    if image is None or image.ndim != 3 or image.shape[2] != 3:
        return None
    return np.asarray(image)


def as_bgr(image: np.ndarray) -> np.ndarray:
    """Three-channel BGR, whatever a driver handed back (grey, BGRA)."""
    if image.ndim == 2 or image.shape[2] == 1:
        return np.asarray(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR))
    if image.shape[2] == 4:
        return np.ascontiguousarray(image[:, :, :3])
    return image


# --------------------------------------------------------------------------- captures

C = TypeVar("C")


class _Held(Generic[C]):
    """One open capture and who is using it."""

    __slots__ = ("capture", "readers", "released", "retired")

    def __init__(self, capture: C) -> None:
        self.capture = capture
        self.readers = 0
        self.retired = False
        self.released = False


class CaptureSource(Generic[C]):
    """A source backed by a blocking capture object (cv2.VideoCapture, Picamera2).

    Implements the close-while-reading rule of :class:`FrameSource`: the
    capture is released by whichever thread is last to let go of it, so a
    driver never sees ``release()`` while it is inside ``read()``, and an
    abandoned capture is never read again. Subclasses supply the four hooks.
    """

    def __init__(
        self,
        name: str,
        *,
        live: bool,
        clock_now: Callable[[], float],
        fps: float | None = None,
    ) -> None:
        self.name = name
        self.live = live
        self.fps = fps
        self._clock_now = clock_now
        self._lock = threading.Lock()
        self._held: _Held[C] | None = None
        self._next_index = 0

    # Hooks -------------------------------------------------------------------

    def _open_capture(self) -> C:
        raise NotImplementedError

    def _read_capture(self, capture: C) -> tuple[np.ndarray, float | None] | None:
        """(image, media time in seconds or None) or None at the end of a file."""
        raise NotImplementedError

    def _seek_capture(self, capture: C, index: int) -> None:
        raise SourceError(f"{self.name}: cannot seek in a live source")

    def _release_capture(self, capture: C) -> None:
        raise NotImplementedError

    # FrameSource -------------------------------------------------------------

    def open(self) -> None:
        self.close()
        capture = self._open_capture()
        with self._lock:
            self._held = _Held(capture)
            if not self.live:
                self._next_index = 0

    def read(self) -> Frame | None:
        with self._using() as held:
            result = self._read_capture(held.capture)
        with self._lock:
            if held.retired:
                raise SourceError(f"{self.name}: closed while reading")
            if result is None:
                return None
            index = self._next_index
            self._next_index += 1
        image, media_t = result
        return Frame(
            as_bgr(image), t_media=self._frame_time(index, media_t), index=index, source=self.name
        )

    def seek(self, index: int) -> None:
        if index < 0:
            raise SourceError(f"{self.name}: cannot seek to frame {index}")
        with self._using() as held:
            self._seek_capture(held.capture, index)
        with self._lock:
            if held.retired:
                raise SourceError(f"{self.name}: closed while seeking")
            self._next_index = index

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, None
            if held is None:
                return
            held.retired = True
            release = held.readers == 0 and not held.released
            if release:
                held.released = True
        if release:
            self._release_quietly(held.capture)

    # -------------------------------------------------------------------------

    @contextmanager
    def _using(self) -> Iterator[_Held[C]]:
        """The current capture, released here if close() retired it meanwhile."""
        with self._lock:
            held = self._held
            if held is None:
                raise SourceError(f"{self.name}: not open")
            held.readers += 1
        try:
            yield held
        finally:
            with self._lock:
                held.readers -= 1
                release = held.retired and held.readers == 0 and not held.released
                if release:
                    held.released = True
            if release:
                self._release_quietly(held.capture)

    def _frame_time(self, index: int, media_t: float | None) -> float:
        if self.live:
            return self._clock_now()
        # Some containers report no position (or 0 for every frame); count frames then.
        if (
            media_t is not None
            and math.isfinite(media_t)
            and (media_t > 0 or (media_t == 0 and index == 0))
        ):
            return media_t
        return index / self.fps if self.fps else float(index)

    def _release_quietly(self, capture: C) -> None:
        try:
            self._release_capture(capture)
        except Exception as exc:
            log.warning("%s: release failed: %s", self.name, _first_line(str(exc)))


class OpenCVSource(CaptureSource[Any]):
    """A webcam (an index or a /dev node), a video file, or a network stream URL."""

    def __init__(
        self,
        target: int | str,
        *,
        clock_now: Callable[[], float],
        open_timeout_s: float = 10.0,
        read_timeout_s: float = 10.0,
    ) -> None:
        self._target = target
        self._open_timeout_s = open_timeout_s
        self._read_timeout_s = read_timeout_s
        if isinstance(target, int):
            self.kind = "camera"
            name = f"camera {target}"
        elif _URL_RE.match(target):
            self.kind = "stream"
            name = safe_url(target)
        elif target.startswith("/dev/"):
            self.kind = "camera"
            name = f"camera {target}"
        else:
            self.kind = "file"
            name = target
        super().__init__(name, live=self.kind != "file", clock_now=clock_now)

    def _open_capture(self) -> Any:
        try:
            capture = self._create()
        except cv2.error as exc:
            raise SourceError(f"cannot open {self.name}: {_first_line(str(exc))}") from None
        if not capture.isOpened():
            capture.release()
            if self.kind == "camera":
                raise SourceError(f"cannot open {self.name}")
            if self.kind == "stream":
                raise SourceError(f"cannot open stream {self.name}")
            if not Path(self.name).exists():
                raise SourceError(f"file not found: {self.name}")
            raise SourceError(f"cannot open video file {self.name} (not a video OpenCV can decode)")
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps = fps if math.isfinite(fps) and 0 < fps < 1000 else None
        return capture

    def _create(self) -> Any:
        if self.kind == "camera":
            capture = cv2.VideoCapture(self._target)
            if capture.isOpened() and hasattr(cv2, "CAP_PROP_BUFFERSIZE"):
                # Keep the driver queue short so a slow reader gets recent frames;
                # backends that do not support it just say no.
                capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)
            return capture
        if self.kind == "stream":
            params: list[int] = []
            if hasattr(cv2, "CAP_PROP_OPEN_TIMEOUT_MSEC"):
                params += [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, int(self._open_timeout_s * 1000)]
            if hasattr(cv2, "CAP_PROP_READ_TIMEOUT_MSEC"):
                params += [cv2.CAP_PROP_READ_TIMEOUT_MSEC, int(self._read_timeout_s * 1000)]
            if params:
                return cv2.VideoCapture(self._target, cv2.CAP_FFMPEG, params)
            return cv2.VideoCapture(self._target, cv2.CAP_FFMPEG)
        return cv2.VideoCapture(self._target)

    def _read_capture(self, capture: Any) -> tuple[np.ndarray, float | None] | None:
        try:
            ok, image = capture.read()
        except cv2.error as exc:
            raise SourceError(f"{self.name}: read failed: {_first_line(str(exc))}") from None
        if not ok or image is None:
            if self.live:
                raise SourceError(f"{self.name}: no frame (disconnected or stream lost)")
            return None
        if self.live:
            return image, None
        return image, float(capture.get(cv2.CAP_PROP_POS_MSEC)) / 1000.0

    def _seek_capture(self, capture: Any, index: int) -> None:
        if self.live:
            super()._seek_capture(capture, index)
        if not capture.set(cv2.CAP_PROP_POS_FRAMES, float(index)):
            raise SourceError(f"{self.name}: cannot seek to frame {index}")

    def _release_capture(self, capture: Any) -> None:
        capture.release()


def _natural_key(path: Path) -> list[int | str]:
    # "img2" before "img10", the order a person expects.
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


class ImageFolderSource:
    """The images of a folder (or one image file) in name order, at ``fps`` frames a second."""

    live = False

    def __init__(self, path: Path | str, *, fps: float = 1.0) -> None:
        if not fps > 0:
            raise SourceError(f"frame rate for images must be positive, not {fps}")
        self.path = Path(path)
        self.name = str(path)
        self.fps: float | None = fps
        self._fps = fps
        self._lock = threading.Lock()
        self._files = self._list()
        self._index = 0

    def _list(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        if not self.path.is_dir():
            raise SourceError(f"file not found: {self.path}")
        try:
            files = [
                p
                for p in self.path.iterdir()
                if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()
            ]
        except OSError as exc:
            raise SourceError(f"cannot list folder {self.path}: {exc.strerror}") from None
        if not files:
            kinds = ", ".join(sorted(e.lstrip(".") for e in IMAGE_EXTENSIONS))
            raise SourceError(f"no images ({kinds}) in folder {self.path}")
        return sorted(files, key=_natural_key)

    def open(self) -> None:
        files = self._list()
        with self._lock:
            self._files = files
            self._index = 0

    def read(self) -> Frame | None:
        with self._lock:
            index = self._index
            if index >= len(self._files):
                return None
            self._index += 1
            path = self._files[index]
        try:
            image = decode_image(np.fromfile(path, dtype=np.uint8).tobytes())
        except OSError as exc:
            raise UnreadableFrame(f"cannot read image {path}: {exc}", index=index) from None
        if image is None:
            raise UnreadableFrame(f"cannot read image {path}", index=index)
        return Frame(as_bgr(image), t_media=index / self._fps, index=index, source=self.name)

    def seek(self, index: int) -> None:
        if index < 0:
            raise SourceError(f"{self.name}: cannot seek to frame {index}")
        with self._lock:
            self._index = index

    def close(self) -> None:
        pass


class Picamera2Source(CaptureSource[Any]):
    """The Raspberry Pi camera module through picamera2 (imported only when opened)."""

    def __init__(
        self,
        *,
        clock_now: Callable[[], float],
        camera_num: int = 0,
        size: tuple[int, int] = (1280, 720),
        fps: float | None = None,
    ) -> None:
        super().__init__(f"picamera2 camera {camera_num}", live=True, clock_now=clock_now, fps=fps)
        self._camera_num = camera_num
        self._size = size

    def _open_capture(self) -> Any:
        try:
            from picamera2 import Picamera2  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            raise SourceUnavailable(
                "picamera2 is not installed (apt install python3-picamera2)"
            ) from None
        camera: Any = None
        try:
            camera = Picamera2(self._camera_num)
            # libcamera names formats by register order: "RGB888" lands in memory as
            # B, G, R, which is OpenCV's BGR already, so no per-frame conversion.
            main: dict[str, Any] = {"size": self._size, "format": "RGB888"}
            controls: dict[str, Any] = {"FrameRate": self.fps} if self.fps else {}
            camera.configure(camera.create_video_configuration(main=main, controls=controls))
            camera.start()
        except Exception as exc:
            if camera is not None:
                self._release_quietly(camera)
            raise SourceError(f"cannot open {self.name}: {_first_line(str(exc))}") from None
        return camera

    def _read_capture(self, capture: Any) -> tuple[np.ndarray, float | None] | None:
        try:
            image = capture.capture_array("main")
        except Exception as exc:
            raise SourceError(f"{self.name}: read failed: {_first_line(str(exc))}") from None
        return np.asarray(image), None

    def _release_capture(self, capture: Any) -> None:
        try:
            capture.stop()
        finally:
            capture.close()


def open_source(
    spec: str,
    *,
    clock_now: Callable[[], float],
    folder_fps: float = 1.0,
    open_timeout_s: float = 10.0,
    read_timeout_s: float = 10.0,
) -> FrameSource:
    """The source a command-line ``--source`` names; nothing is opened yet.

    Raises SourceError for what can be known without opening: a path that does
    not exist, an empty folder, an unsupported URL scheme.
    """
    text = spec.strip()
    if not text:
        raise SourceError("no source given (a camera index, a file, a folder or a URL)")
    if text.isdigit():
        return OpenCVSource(int(text), clock_now=clock_now)
    if text.lower() in PICAMERA_SPECS:
        return Picamera2Source(clock_now=clock_now)
    match = _URL_RE.match(text)
    if match:
        scheme = match.group(1).lower()
        if scheme == "file":
            text = urlsplit(text).path
        elif scheme in STREAM_SCHEMES:
            return OpenCVSource(
                text,
                clock_now=clock_now,
                open_timeout_s=open_timeout_s,
                read_timeout_s=read_timeout_s,
            )
        else:
            raise SourceError(f"unsupported source URL scheme {scheme}:// in {safe_url(text)}")
    path = Path(text).expanduser()
    if path.is_dir():
        return ImageFolderSource(path, fps=folder_fps)
    if path.is_file():
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            return ImageFolderSource(path, fps=folder_fps)
        return OpenCVSource(str(path), clock_now=clock_now)
    if path.exists():  # a device node such as /dev/video0
        return OpenCVSource(str(path), clock_now=clock_now)
    raise SourceError(f"file not found: {text}")
