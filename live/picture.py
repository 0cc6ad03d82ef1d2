"""What the runtime needs of a picture that rides a realtime request.

The runtime carries the device's frames without knowing the device: any
object with a time in its source and a JPEG made on demand is a picture
(``device/vision/frame.py:Frame`` is the one Lookout sends). Structural, so
``live/`` imports nothing else of Lookout's.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

JPEG_MIME = "image/jpeg"


@runtime_checkable
class Picture(Protocol):
    t_media: float

    def jpeg(self) -> bytes:
        """The picture as JPEG (blocking: call off the event loop)."""
        ...


__all__ = ["JPEG_MIME", "Picture"]
