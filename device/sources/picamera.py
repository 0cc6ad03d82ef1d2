"""The Raspberry Pi camera module through picamera2 (imported only when opened)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from device.sources.base import (
    CaptureSource,
    SourceError,
    SourceUnavailable,
    first_line,
)

PICAMERA_DEFAULT_FPS = 30.0  # picamera2's video configuration when no FrameRate is given


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
        super().__init__(
            f"picamera2 camera {camera_num}", is_camera=True, clock_now=clock_now, fps=fps
        )
        self._camera_num = camera_num
        self._size = size

    def _open_capture(self) -> Any:
        try:
            from picamera2 import Picamera2  # type: ignore[import-not-found, unused-ignore]
        except ImportError as exc:
            if getattr(exc, "name", None) in ("picamera2", None) and "picamera2" in str(exc):
                raise SourceUnavailable(
                    "picamera2 is not installed (apt install python3-picamera2)"
                ) from None
            raise SourceUnavailable(
                f"picamera2 cannot be imported: {first_line(str(exc))}"
            ) from None
        except ValueError as exc:
            # Bookworm's apt simplejpeg is built for numpy 1; the venv has numpy 2. Retrying
            # cannot help, so say the fix once (docs/raspberry-pi.md).
            raise SourceUnavailable(
                f"picamera2 cannot be imported ({first_line(str(exc))}): a module built for "
                "another numpy; .venv/bin/pip install simplejpeg"
            ) from None
        camera: Any = None
        try:
            camera = Picamera2(self._camera_num)
            # libcamera names formats by register order: "RGB888" lands in memory as
            # B, G, R, which is OpenCV's BGR already, so no per-frame conversion.
            main: dict[str, Any] = {"size": self._size, "format": "RGB888"}
            rate = self.fps
            if rate is None:
                # Each frame is an ISP pass and a copy of the whole image into Python:
                # ask for little more than is sampled (device/sources/base.py).
                rate = self.camera_target(PICAMERA_DEFAULT_FPS)
                if rate is not None:
                    self.fps_note = f"asked for {rate:g} fps (its default 30)"
            controls: dict[str, Any] = {"FrameRate": rate} if rate else {}
            camera.configure(camera.create_video_configuration(main=main, controls=controls))
            camera.start()
        except Exception as exc:
            if camera is not None:
                self._release_quietly(camera)
            raise SourceError(f"cannot open {self.name}: {first_line(str(exc))}") from None
        return camera

    def _read_capture(self, capture: Any) -> tuple[np.ndarray, float | None] | None:
        try:
            image = capture.capture_array("main")
        except Exception as exc:
            raise SourceError(f"{self.name}: read failed: {first_line(str(exc))}") from None
        return np.asarray(image), None

    def _release_capture(self, capture: Any) -> None:
        try:
            capture.stop()
        finally:
            capture.close()
