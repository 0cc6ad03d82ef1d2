"""One picture as it travels from the source to the tools: the ``Frame`` value.

It is a ``live/picture.py:Picture``: what the live runtime carries to tools
and models.

A frame carries its pixels, where it sits in the source (``t_media``, ``index``),
when it was taken (``t_wall``) and which source it came from. The JPEG a model
or a viewer may want is made at most once, on first use: a device that sends
no frames anywhere never encodes one.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from live.picture import JPEG_MIME

DEFAULT_JPEG_QUALITY = 80


def encode_jpeg(image: np.ndarray, quality: int = DEFAULT_JPEG_QUALITY) -> bytes:
    """``image`` (BGR uint8) as JPEG bytes; raises ValueError if it cannot be encoded."""
    import cv2  # only when a JPEG is actually wanted

    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return bytes(data.tobytes())


class Frame:
    """A decoded frame: BGR pixels plus its place in the source and in time.

    ``t_media`` is the frame's time on the source's own axis: media time for a
    file or folder (seconds from its start, continuing across loop passes), the
    device's monotonic clock for a live source. ``t_wall`` is the wall-clock
    time (``time.time()``) it was read. ``cut``: nothing links it to the frame before
    (the first of a replay's next pass, after a seek): who was in view, zone visits and
    dwell end there. Frames are never modified once made; ``with_image`` gives a resized
    copy with the same identity.
    """

    __slots__ = (
        "_jpeg",
        "_lock",
        "cut",
        "image",
        "index",
        "jpeg_quality",
        "source",
        "t_media",
        "t_wall",
    )

    def __init__(
        self,
        image: np.ndarray,
        *,
        t_media: float,
        index: int,
        t_wall: float | None = None,
        source: str = "",
        jpeg: bytes | None = None,
        jpeg_quality: int = DEFAULT_JPEG_QUALITY,
        cut: bool = False,
    ) -> None:
        self.image = image
        self.cut = cut
        self.t_media = float(t_media)
        self.index = int(index)
        self.t_wall = time.time() if t_wall is None else float(t_wall)
        self.source = source
        self.jpeg_quality = jpeg_quality
        self._jpeg = jpeg
        self._lock = threading.Lock()

    def jpeg(self) -> bytes:
        """The frame as JPEG, encoded on the first call only (blocking: call off the loop)."""
        data = self._jpeg
        if data is not None:
            return data
        with self._lock:
            if self._jpeg is None:
                self._jpeg = encode_jpeg(self.image, self.jpeg_quality)
            return self._jpeg

    @property
    def has_jpeg(self) -> bool:
        return self._jpeg is not None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.image.shape)

    def with_image(self, image: np.ndarray, *, jpeg_quality: int | None = None) -> Frame:
        """The same frame with other pixels (resized); its JPEG is made anew if wanted."""
        return Frame(
            image,
            t_media=self.t_media,
            index=self.index,
            t_wall=self.t_wall,
            source=self.source,
            jpeg_quality=self.jpeg_quality if jpeg_quality is None else jpeg_quality,
            cut=self.cut,
        )

    def shifted(self, *, dt: float, dindex: int, cut: bool = False) -> Frame:
        """The same pixels later in the source (a looped file's next pass; ``cut``: its
        first frame, where the pass before ended)."""
        return Frame(
            self.image,
            t_media=self.t_media + dt,
            index=self.index + dindex,
            t_wall=self.t_wall,
            source=self.source,
            jpeg=self._jpeg,
            jpeg_quality=self.jpeg_quality,
            cut=cut or self.cut,
        )

    def as_cut(self) -> Frame:
        """This frame, nothing linking it to the one before (a cut fell on a frame left out)."""
        return self if self.cut else self.shifted(dt=0.0, dindex=0, cut=True)

    def __repr__(self) -> str:
        shape: Any = getattr(self.image, "shape", None)
        return f"Frame(index={self.index}, t_media={self.t_media:.3f}, shape={shape})"


__all__ = ["DEFAULT_JPEG_QUALITY", "JPEG_MIME", "Frame", "encode_jpeg"]
