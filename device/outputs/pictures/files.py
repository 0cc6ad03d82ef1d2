"""Reading a ``--snapshots`` picture back by its name: for the page, MQTT and the report.

A name is only ever a name: it must be one Lookout gives (``snapshots.NAME``: no slash,
no ``..``), the file is opened inside the folder without following a link (a link
planted there never leads out of it), and anything larger than a picture Lookout writes
is refused. Blocking file reads: call these in a worker thread, never on the event loop.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from device.outputs.pictures.snapshots import NAME

MAX_BYTES = 8_000_000  # far above a drawn frame's JPEG (50-300 KB); past it, not ours
# O_NONBLOCK: a named pipe planted under a picture's name is refused (fstat), not waited on.
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def valid_name(name: str) -> bool:
    """Whether ``name`` is a picture's name (fullmatch: not even a trailing newline)."""
    return NAME.fullmatch(name) is not None


def read_picture(folder: Path, name: str, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The JPEG ``name`` in ``folder``; None when the name is not a picture's, the file is
    not there (never written, or pruned since), is not a plain file, or is too large."""
    if not valid_name(name):
        return None
    try:
        fd = os.open(folder / name, _FLAGS)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                return None
            data = file.read(max_bytes + 1)
        except OSError:
            return None
    return data if len(data) <= max_bytes else None


def thumbnail(jpeg: bytes, width: int, quality: int = 70) -> bytes | None:
    """``jpeg`` scaled down to ``width`` pixels wide (never up); None if it does not decode."""
    import cv2
    import numpy as np

    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    height, wide = image.shape[:2]
    if wide > width:
        size = (width, max(1, round(height * width / wide)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return encoded.tobytes() if ok else None


__all__ = ["MAX_BYTES", "read_picture", "thumbnail", "valid_name"]
