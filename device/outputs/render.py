"""The frame the status page shows, with the detector's boxes drawn on a copy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOX_COLOR = (60, 200, 60)  # BGR


@dataclass(frozen=True)
class DisplayFrame:
    """A detector frame with its boxes, as the page will show it."""

    seq: int
    image: np.ndarray  # BGR, never modified (the pipeline may still hold it)
    boxes: np.ndarray  # (N, 4) x1, y1, x2, y2 in image pixels
    scores: np.ndarray
    count: int | None  # the device's smoothed count after this frame
    raw: int  # people the detector found in this frame
    at: float  # telemetry's monotonic time of arrival


def render_jpeg(frame: DisplayFrame, quality: int = 80) -> bytes:
    """The frame with its boxes and count drawn on a copy, as JPEG (call off the loop)."""
    import cv2

    image = frame.image.copy()
    height, width = image.shape[:2]
    thickness = max(1, round(max(height, width) / 400))
    for box, score in zip(frame.boxes, frame.scores, strict=True):
        x1, y1, x2, y2 = (round(float(v)) for v in box)
        cv2.rectangle(image, (x1, y1), (x2, y2), BOX_COLOR, thickness)
        label = f"{float(score):.2f}"
        cv2.putText(
            image, label, (x1 + 2, max(12, y1 - 4)), cv2.FONT_HERSHEY_SIMPLEX, 0.4, BOX_COLOR, 1
        )
    shown = "-" if frame.count is None else str(frame.count)
    text = f"{shown} people (smoothed) - {frame.raw} in this frame"
    cv2.rectangle(image, (0, 0), (min(width, 8 + 8 * len(text)), 22), (0, 0, 0), -1)
    cv2.putText(
        image, text, (6, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1, cv2.LINE_AA
    )
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return bytes(data.tobytes())


__all__ = ["BOX_COLOR", "DisplayFrame", "render_jpeg"]
