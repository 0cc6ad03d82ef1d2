"""Short clips cut from the sample video, for tests and benchmarks that need a second camera."""

from __future__ import annotations

from pathlib import Path

import cv2

from tests.datafiles import data_file

FPS = 10.0  # the sample video's


def write_clip(path: Path, seconds: float, *, start_s: float = 0.0, mirrored: bool = False) -> Path:
    """``seconds`` of vtest.avi from ``start_s`` (mirrored left to right: another scene
    with the same people) as an MJPEG AVI at ``path``."""
    source = cv2.VideoCapture(str(data_file("vtest.avi")))
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), FPS, (768, 576))
    try:
        source.set(cv2.CAP_PROP_POS_FRAMES, round(start_s * FPS))
        for _ in range(round(seconds * FPS)):
            ok, image = source.read()
            if not ok:
                raise ValueError(f"vtest.avi has no frames past {start_s + seconds:g} s")
            writer.write(cv2.flip(image, 1) if mirrored else image)
    finally:
        writer.release()
        source.release()
    return path


__all__ = ["FPS", "write_clip"]
