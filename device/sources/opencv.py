"""OpenCV sources: a webcam (an index or a /dev node), a video file, or a network stream."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from device.sources.base import (
    _URL_RE,
    CaptureSource,
    Grab,
    SourceError,
    first_line,
)
from live.util.redact import safe_url


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
        super().__init__(name, is_camera=self.kind != "file", clock_now=clock_now)
        self.frame_count: int | None = None  # frames in a video file, when it says

    def _open_capture(self) -> Any:
        try:
            capture = self._create()
        except cv2.error as exc:
            raise SourceError(f"cannot open {self.name}: {first_line(str(exc))}") from None
        if not capture.isOpened():
            capture.release()
            if self.kind == "camera":
                raise SourceError(f"cannot open {self.name}{self._why_no_camera()}")
            if self.kind == "stream":
                raise SourceError(f"cannot open stream {self.name}")
            if not Path(self.name).exists():
                raise SourceError(f"file not found: {self.name}")
            raise SourceError(f"cannot open video file {self.name} (not a video OpenCV can decode)")
        width = int(capture.get(cv2.CAP_PROP_FRAME_WIDTH) or 0)
        height = int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0)
        if self.max_pixels is not None and width * height > self.max_pixels:
            # A video or a stream whose size is known: refused before a frame is decoded.
            capture.release()
            raise SourceError(
                f"{self.name}: its frames are {width}x{height}, {width * height / 1e6:.1f} "
                f"megapixels, over the limit of {self.max_pixels / 1e6:g} (--max-image-pixels)"
            )
        self.fps = self._fps_of(capture)
        if self.kind == "file":
            frames = float(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0.0)
            self.frame_count = int(frames) if math.isfinite(frames) and frames > 0 else None
        return capture

    def _ask_for_fewer_frames(self, capture: Any, sample_fps: float) -> None:
        """Ask the camera for the lowest common rate that still feeds ``sample_fps``.

        Every frame a camera sends is dequeued (grabbed) even when it is not decoded,
        and USB and the driver work for each one: a 30 fps webcam feeding 2 detections a
        second does fifteen times the work it needs to. A driver that refuses, or gives
        less than is sampled, is put back to its own rate."""
        default = self._fps_of(capture)
        target = self.camera_target(default)
        if target is None or target == default:
            self.fps_note = None if default is None else f"at its own {default:g} fps"
            return
        accepted = bool(capture.set(cv2.CAP_PROP_FPS, target))
        got = self._fps_of(capture)
        if accepted and got is not None and got >= sample_fps:
            self.fps_note = f"asked for {target:g} fps (its default {default:g}): gives {got:g}"
            return
        if default is not None:
            capture.set(cv2.CAP_PROP_FPS, default)
        own = f"at its own {default:g} fps" if default is not None else "at its own rate"
        self.fps_note = f"asked for {target:g} fps: refused or too few, {own}"

    @staticmethod
    def _fps_of(capture: Any) -> float | None:
        fps = float(capture.get(cv2.CAP_PROP_FPS) or 0.0)
        return fps if math.isfinite(fps) and 0 < fps < 1000 else None

    def _why_no_camera(self) -> str:
        """What a person can do about a camera that does not open (Linux device nodes)."""
        node = Path(f"/dev/video{self._target}") if isinstance(self._target, int) else None
        if isinstance(self._target, str):
            node = Path(self._target)
        if node is None or not Path("/dev").is_dir():
            return ""
        if not node.exists():
            return f": {node} does not exist (no camera connected, or not this index?)"
        if not os.access(node, os.R_OK | os.W_OK):
            return f": no permission on {node} (add the user to the video group)"
        return f": {node} exists but does not open (in use by another program?)"

    def _create(self) -> Any:
        if self.kind == "camera":
            capture = cv2.VideoCapture(self._target)
            if capture.isOpened() and hasattr(cv2, "CAP_PROP_BUFFERSIZE"):
                # Keep the driver queue short so a slow reader gets recent frames;
                # backends that do not support it just say no.
                capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)
            if capture.isOpened() and self.wanted_fps is not None:
                self._ask_for_fewer_frames(capture, self.wanted_fps)
            return capture
        if self.kind == "stream":
            if str(self._target).lower().startswith(("http://", "https://")):
                # MJPEG is read here, each frame's size known before it is decoded.
                # (Imported here: http.client and ssl are for network cameras only.)
                from device.sources.mjpeg import MjpegStream

                stream = MjpegStream.connect(
                    str(self._target),
                    name=self.name,
                    open_timeout_s=self._open_timeout_s,
                    read_timeout_s=self._read_timeout_s,
                )
                if stream is not None:
                    if self.max_pixels is not None:
                        stream.max_pixels = self.max_pixels
                    return stream
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
        grab = self._grab_capture(capture)
        if grab is None:
            return None
        image = self._retrieve_capture(capture, grab)
        if image is None:
            raise SourceError(f"{self.name}: a frame could not be decoded")
        return image, grab.media_t

    def _grab_capture(self, capture: Any) -> Grab | None:
        # grab() dequeues a camera's buffer (its MJPEG is not decoded) or decodes a
        # video's next frame without converting it to BGR; retrieve() does the rest.
        try:
            ok = capture.grab()
        except cv2.error as exc:
            raise SourceError(f"{self.name}: read failed: {first_line(str(exc))}") from None
        if not ok:
            if self.is_camera:
                raise SourceError(f"{self.name}: no frame (disconnected or stream lost)")
            return None
        if self.is_camera:
            return Grab(None)
        return Grab(float(capture.get(cv2.CAP_PROP_POS_MSEC)) / 1000.0)

    def _retrieve_capture(self, capture: Any, grab: Grab) -> np.ndarray | None:
        try:
            ok, image = capture.retrieve()
        except cv2.error as exc:
            raise SourceError(f"{self.name}: read failed: {first_line(str(exc))}") from None
        return image if ok and image is not None else None

    def _seek_capture(self, capture: Any, index: int) -> None:
        if self.is_camera:
            super()._seek_capture(capture, index)
        if not capture.set(cv2.CAP_PROP_POS_FRAMES, float(index)):
            raise SourceError(f"{self.name}: cannot seek to frame {index}")

    def _release_capture(self, capture: Any) -> None:
        capture.release()
