"""The neutral detection type and the detector protocol, without any inference runtime.

Everything downstream of a detector (perception, tools, the status page, tests
built from synthetic boxes) speaks ``Detections``; only ``models/detector.py``
knows ONNX Runtime. A detector is anything with ``detect(frame_bgr)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float32]


@dataclass(frozen=True)
class Detections:
    boxes: FloatArray  # (N, 4) x1, y1, x2, y2 in source-frame pixels, clipped to the frame
    scores: FloatArray  # (N,)

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    @staticmethod
    def empty() -> Detections:
        return Detections(np.zeros((0, 4), np.float32), np.zeros((0,), np.float32))

    def at_least(self, score: float) -> Detections:
        """Only the boxes scoring ``score`` or more."""
        keep = self.scores >= score
        if bool(keep.all()):
            return self
        return Detections(self.boxes[keep], self.scores[keep])

    def feet(self) -> FloatArray:
        """Where each person stands: the bottom centre of the box, (N, 2) pixels."""
        return np.stack(
            [(self.boxes[:, 0] + self.boxes[:, 2]) / 2, self.boxes[:, 3]], axis=1
        ).astype(np.float32, copy=False)


class Detector(Protocol):
    """Finds people in a BGR frame; one call at a time (callers serialise)."""

    def detect(self, frame_bgr: np.ndarray) -> Detections: ...


__all__ = ["Detections", "Detector", "FloatArray"]
