"""The neutral detection type and the detector protocol, without any inference runtime.

Everything downstream of a detector (perception, tools, the status page, tests
built from synthetic boxes) speaks ``Detections``; only ``models/detector.py``
knows ONNX Runtime. A detector is anything with ``detect(frame_bgr)``.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def pairwise_iou(a: np.ndarray, b: np.ndarray) -> NDArray[np.float64]:
    """IoU of every box in ``a`` (N, 4) with every box in ``b`` (M, 4): (N, M); boxes of no
    area overlap nothing."""
    if not len(a) or not len(b):
        return np.zeros((len(a), len(b)))
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    result: NDArray[np.float64] = np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)
    return result


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two boxes (x1, y1, x2, y2)."""
    return float(pairwise_iou(np.asarray([a[:4]], float), np.asarray([b[:4]], float))[0, 0])


class Detector(Protocol):
    """Finds people in a BGR frame; one call at a time (callers serialise)."""

    def detect(self, frame_bgr: np.ndarray) -> Detections: ...


__all__ = ["Detections", "Detector", "FloatArray", "box_iou", "pairwise_iou"]
