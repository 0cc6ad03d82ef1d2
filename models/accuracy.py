"""The accuracy rule every way of running the detector is held to before ``auto`` may choose it.

The reference is what Lookout has always counted with: the shipped fp32 NanoDet-g run by
onnxruntime. Another backend or precision is faster only if it finds the same people: on
the shipped check set (``models/check/``, made by ``scripts/make_check_set.py``: the 16
hand-counted frames of the sample video, 12 quarters of three more frames with people
twice as large, and a close-up photo), with the reference's boxes as they are stored,

- **scores**: of the reference's boxes (score 0.3 or more), 95 in 100 keep their score
  within 0.01 (a box no longer found at IoU 0.5 has lost its whole score). Rounding
  (bf16, fp16 arithmetic) moves scores by ~0.001-0.004; re-weighing (int8) by ~0.01-0.04
  (docs/benchmarks.md), which flips people near the threshold in and out of the count;
- **counts**: the count at the default threshold changes on at most 2 images, by one.

A variant outside either is never chosen by ``auto`` (it can still be asked for by name:
``--precision int8`` is a user's informed choice, with its measured cost in the docs).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import cv2
import numpy as np

from models.detections import Detections, box_iou

CHECK_DIR = Path(__file__).parent / "check"
REFERENCE_FILE = CHECK_DIR / "reference.json"
REPORT_SCORE = 0.3  # the lowest score the reference keeps (the tracker's low boxes)
COUNT_SCORE = 0.45  # the default threshold: what the counts are taken at
MATCH_IOU = 0.5
SCORE_SHIFT = 0.01  # the most the 95th percentile of score changes may be
MOST_IMAGES_CHANGED = 2
MOST_CHANGE = 1

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class CheckImage:
    name: str
    image: np.ndarray
    reference: list[tuple[Box, float]]  # the reference's boxes and scores


@dataclass(frozen=True)
class Verdict:
    """How a variant did on the check set against the reference."""

    images: int
    boxes: int  # the reference's boxes scored
    score_shift_p95: float
    lost: int  # reference boxes with no box at IoU 0.5
    counts_changed: int  # images whose count at the default threshold changed
    most_change: int

    @property
    def passed(self) -> bool:
        return (
            self.score_shift_p95 <= SCORE_SHIFT
            and self.counts_changed <= MOST_IMAGES_CHANGED
            and self.most_change <= MOST_CHANGE
        )

    def describe(self) -> str:
        """``scores within 0.004 (95 %), counts changed on 0 of 29 images``."""
        counts = f"counts changed on {self.counts_changed} of {self.images} images"
        if self.most_change > 1:
            counts += f" (by up to {self.most_change})"
        return f"scores within {self.score_shift_p95:.3f} (95 %), {counts}"

    def failure(self) -> str:
        """Why it fails, against the rule (empty when it passes)."""
        why = []
        if self.score_shift_p95 > SCORE_SHIFT:
            why.append(f"scores move by {self.score_shift_p95:.3f}, over {SCORE_SHIFT}")
        if self.counts_changed > MOST_IMAGES_CHANGED or self.most_change > MOST_CHANGE:
            why.append(f"counts changed on {self.counts_changed} of {self.images} images")
        return "; ".join(why)


@cache
def check_set() -> tuple[CheckImage, ...]:
    """The shipped check images with the reference's boxes (read once a process)."""
    stored = json.loads(REFERENCE_FILE.read_text())["images"]
    out = []
    for name, boxes in stored.items():
        image = cv2.imread(str(CHECK_DIR / name), cv2.IMREAD_COLOR)
        if image is None:
            raise FileNotFoundError(f"check image {CHECK_DIR / name} cannot be read")
        out.append(
            CheckImage(name, image, [((b[0], b[1], b[2], b[3]), float(b[4])) for b in boxes])
        )
    return tuple(out)


def judge(
    detect: Callable[[np.ndarray], Detections],
    reference: Sequence[Sequence[tuple[Box, float]]] | None = None,
) -> Verdict:
    """Run ``detect`` (boxes down to ``REPORT_SCORE`` or lower) over the check set, against
    ``reference`` (each image's boxes and scores; default: the stored reference's)."""
    images = check_set()
    refs = [item.reference for item in images] if reference is None else reference
    shifts: list[float] = []
    lost = changed = most = 0
    for item, ref in zip(images, refs, strict=True):
        dets = detect(item.image)
        boxes, scores = dets.boxes.tolist(), dets.scores.tolist()
        ref = [(b, s) for b, s in ref if s >= REPORT_SCORE]
        for ref_box, ref_score in ref:
            best = max(
                ((box_iou(ref_box, box), score) for box, score in zip(boxes, scores, strict=True)),
                default=(0.0, 0.0),
            )
            if best[0] < MATCH_IOU:
                lost += 1
                shifts.append(ref_score)
            else:
                shifts.append(abs(best[1] - ref_score))
        change = abs(sum(s >= COUNT_SCORE for s in scores) - sum(s >= COUNT_SCORE for _, s in ref))
        changed += change > 0
        most = max(most, change)
    p95 = float(np.percentile(shifts, 95)) if shifts else 0.0
    return Verdict(len(images), len(shifts), p95, lost, changed, most)


__all__ = ["CHECK_DIR", "REFERENCE_FILE", "CheckImage", "Verdict", "check_set", "judge"]
