"""What perception made of one frame, as every consumer of that frame receives it.

The device runs the detector (and the smoothing) once per sampled frame; the
result travels beside the frame into the session's fan-out, so the status
page, the metrics, MQTT and every model-facing tool read the same numbers and
no consumer runs the detector again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from live.frame import Frame
from models.detections import Detections


@dataclass(frozen=True, eq=False)
class Percept:
    """Perception's result for one frame.

    ``raw`` is how many people the detector found in this frame; ``count`` is
    the device's smoothed count after it (what every output reports), and
    ``changed`` says this frame changed that count (from ``previous``).
    ``error`` is set (and the detections are empty) when the frame could not be
    used; the smoothed count then stands as it was.
    """

    frame: Frame
    detections: Detections
    raw: int
    count: int | None  # None only before the first usable frame
    previous: int | None
    changed: bool
    detect_ms: float
    seq: int
    error: str | None = None

    @property
    def t_media(self) -> float:
        return self.frame.t_media


@dataclass(frozen=True)
class CountUnknown:
    """Perception cannot count now (the source is down, or no frame came for a while).

    It travels to the tools like a percept, without a frame: a consumer that was
    told a count must be told it no longer holds. Counting resumes by itself,
    with a fresh first count, when frames come again.
    """

    reason: str


# The newest percept of a running source, or None (nothing yet, or the source is down).
CurrentPercept = Callable[[], Percept | None]

__all__ = ["CountUnknown", "CurrentPercept", "Percept"]
