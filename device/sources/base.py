"""What every frame source is: the protocol, its errors, and the capture-backed base.

Every method of a source blocks (a camera read can take as long as the camera
wants), so the async side calls them from worker threads only; see
``device/feeds``. A source knows nothing about retries: it opens, reads,
seeks and closes, and says plainly what went wrong.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

import cv2
import numpy as np

from device.sources.pixels import FrameTooLarge, check_pixels
from device.vision.frame import Frame

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
    is_camera: (
        bool  # camera or stream (frames are dropped when late) vs file or folder (every frame)
    )
    fps: float | None

    def open(self) -> None: ...

    def read(self) -> Frame | None:
        """The next frame; ``None`` at the end of a file. Raises SourceError."""
        ...

    def seek(self, index: int) -> None:
        """Make ``index`` the next frame read (files and folders only)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Grabbed:
    """A frame a source moved to without decoding it: where it sits in the source."""

    index: int
    t_media: float


@runtime_checkable
class Grabs(Protocol):
    """A source that can move past a frame without decoding it (``grab``) and decode the
    frame it moved to only when it is wanted (``retrieve``); ``read`` is the two together.

    Most frames of a 10 or 30 fps source are never looked at (the detector samples
    2 or 5 a second): a camera's frame is then only dequeued, not decoded from
    MJPEG; a video's frame is decoded but not converted to BGR; an image file is
    not even opened. Both block, like ``read``.
    """

    def grab(self) -> Grabbed | None:
        """Move to the next frame; None at the end of a file. Raises SourceError."""
        ...

    def retrieve(self) -> Frame:
        """The frame the last ``grab`` moved to, decoded. Raises SourceError
        (UnreadableFrame when just this frame cannot be decoded)."""
        ...


def first_line(text: str) -> str:
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


@dataclass(frozen=True)
class Grab:
    """What a capture's grab gave: the frame's media time, and its image when the
    capture has no cheaper grab than a full read."""

    media_t: float | None
    image: np.ndarray | None = None


@dataclass(frozen=True)
class _Pending:
    """The frame grabbed and not yet retrieved."""

    index: int
    t_media: float
    t_wall: float
    grab: Grab


class _Held(Generic[C]):
    """One open capture and who is using it."""

    __slots__ = ("capture", "pending", "readers", "released", "retired")

    def __init__(self, capture: C) -> None:
        self.capture = capture
        self.readers = 0
        self.retired = False
        self.released = False
        self.pending: _Pending | None = None


# Camera frame rates that drivers commonly offer. A camera is asked for the lowest of
# them at least CAMERA_FPS_FACTOR times the sampling rate, so that a sampled frame is
# never older than about half a sampling interval and a late read still finds one.
CAMERA_FPS_MODES = (5.0, 10.0, 15.0, 20.0, 25.0, 30.0)
CAMERA_FPS_FACTOR = 2.0


def camera_fps(sample_fps: float, default_fps: float | None) -> float | None:
    """The rate to ask a camera for when frames are sampled at ``sample_fps``, or None
    to leave it at ``default_fps`` (no lower mode would do, or its default is unknown)."""
    if default_fps is None or not sample_fps > 0:
        return None
    wanted = next((m for m in CAMERA_FPS_MODES if m >= CAMERA_FPS_FACTOR * sample_fps), None)
    if wanted is None or wanted >= default_fps - 0.5:
        return None
    return wanted


class CaptureSource(Generic[C]):
    """A source backed by a blocking capture object (cv2.VideoCapture, Picamera2).

    Implements the close-while-reading rule of :class:`FrameSource`: the
    capture is released by whichever thread is last to let go of it, so a
    driver never sees ``release()`` while it is inside ``read()``, and an
    abandoned capture is never read again. Subclasses supply the four hooks,
    and may split the read into a cheap grab and a decoding retrieve (two more).
    """

    def __init__(
        self,
        name: str,
        *,
        is_camera: bool,
        clock_now: Callable[[], float],
        fps: float | None = None,
    ) -> None:
        self.name = name
        self.is_camera = is_camera
        self.fps = fps
        # The frame rate the pipeline samples at (set before open by request_fps): a
        # camera that can is asked for a lower rate than its default to match it.
        self.wanted_fps: float | None = None
        self.fixed_camera_fps: float | None = None  # the user's --camera-fps, when given
        self.fps_note: str | None = None  # what was asked of the camera and what it gave
        # Frames bigger than this are not passed on (--max-image-pixels): a stream that
        # sends a 16000x16000 frame would otherwise cost a resize of 768 MB on top.
        self.max_pixels: int | None = None
        self._clock_now = clock_now
        self._lock = threading.Lock()
        self._held: _Held[C] | None = None
        self._next_index = 0

    def request_fps(self, sample_fps: float, camera: float | None = None) -> None:
        """Frames will be sampled at ``sample_fps``: a camera that supports it is opened at
        ``camera`` fps when given, else at a lower rate than its default (``camera_fps``);
        files and streams ignore this."""
        self.wanted_fps = sample_fps
        self.fixed_camera_fps = camera

    def camera_target(self, default_fps: float | None) -> float | None:
        """The rate to ask this camera for, or None to leave it at its own."""
        if self.wanted_fps is None:
            return None
        if self.fixed_camera_fps is not None:
            return self.fixed_camera_fps
        return camera_fps(self.wanted_fps, default_fps)

    # Hooks -------------------------------------------------------------------

    def _open_capture(self) -> C:
        raise NotImplementedError

    def _read_capture(self, capture: C) -> tuple[np.ndarray, float | None] | None:
        """(image, media time in seconds or None) or None at the end of a file."""
        raise NotImplementedError

    def _grab_capture(self, capture: C) -> Grab | None:
        """Move to the next frame without decoding it if the capture can; None at the end
        of a file. By default a full read, whose image ``_retrieve_capture`` hands back."""
        result = self._read_capture(capture)
        if result is None:
            return None
        image, media_t = result
        return Grab(media_t, image)

    def _retrieve_capture(self, capture: C, grab: Grab) -> np.ndarray | None:
        """The grabbed frame's image; None when it cannot be decoded."""
        return grab.image

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
            if not self.is_camera:
                self._next_index = 0

    def read(self) -> Frame | None:
        if self.grab() is None:
            return None
        return self.retrieve()

    def grab(self) -> Grabbed | None:
        with self._using() as held:
            result = self._grab_capture(held.capture)
            t_wall = time.time()
        with self._lock:
            if held.retired:
                raise SourceError(f"{self.name}: closed while reading")
            held.pending = None
            if result is None:
                return None
            index = self._next_index
            self._next_index += 1
            # A camera frame's time is when it came, not when (or whether) it is decoded.
            pending = _Pending(index, self._frame_time(index, result.media_t), t_wall, result)
            held.pending = pending
        return Grabbed(pending.index, pending.t_media)

    def retrieve(self) -> Frame:
        with self._using() as held:
            with self._lock:
                pending, held.pending = held.pending, None
            if pending is None:
                raise SourceError(f"{self.name}: no frame grabbed to decode")
            try:  # a capture that reads a frame's size first refuses it undecoded
                image = self._retrieve_capture(held.capture, pending.grab)
                if image is not None:
                    check_pixels(image.shape[1], image.shape[0], self.max_pixels)
            except FrameTooLarge as exc:
                raise UnreadableFrame(
                    f"{self.name}: frame {pending.index} {exc}", index=pending.index
                ) from None
        with self._lock:
            if held.retired:
                raise SourceError(f"{self.name}: closed while reading")
        if image is None:
            if self.is_camera:
                raise SourceError(f"{self.name}: a frame could not be decoded")
            raise UnreadableFrame(
                f"{self.name}: frame {pending.index} could not be decoded", index=pending.index
            )
        return Frame(
            as_bgr(image),
            t_media=pending.t_media,
            index=pending.index,
            t_wall=pending.t_wall,
            source=self.name,
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
        if self.is_camera:
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
            log.warning("%s: release failed: %s", self.name, first_line(str(exc)))
