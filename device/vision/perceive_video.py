"""A video file perceived start to end in one blocking call: ``perceive_video``.

For scripts and tests that want what perception makes of a recording (its percepts through
``on_percept``, its events through ``publish``) without the capture loop of ``lookout run``:
no frame is dropped for lateness, none is resized, each is given to ``Perception.process``
in order. A frame's ``t_media`` is its index over the file's frame rate, its ``source`` the
file's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import cv2

from device.vision.frame import Frame
from device.vision.perception import Perception


def _video_frames(path: Path, every: int, limit: int | None) -> Iterator[Frame]:
    capture = cv2.VideoCapture(str(path))
    try:
        fps = float(capture.get(cv2.CAP_PROP_FPS))
        if not capture.isOpened() or fps <= 0:
            raise ValueError(f"{path}: not a video file OpenCV can read with a frame rate")
        index = 0
        while limit is None or index < limit:
            ok, image = capture.read()
            if not ok:
                return
            if index % every == 0:
                yield Frame(image, t_media=index / fps, index=index, source=path.name)
            index += 1
    finally:
        capture.release()


def perceive_video(
    perception: Perception, path: Path, *, every: int = 1, limit: int | None = None
) -> None:
    """Give ``perception`` every ``every``-th frame of the video at ``path``, from its first,
    up to frame index ``limit`` (not included; None: to the end of the file).

    Raises ValueError when the file cannot be read as a video.
    """
    if every < 1:
        raise ValueError(f"every must be 1 or more, not {every}")

    async def perceive() -> None:
        for frame in _video_frames(path, every, limit):
            await perception.process(frame)

    anyio.run(perceive)


__all__ = ["perceive_video"]
