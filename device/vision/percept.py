"""What perception made of one frame, as every consumer of that frame receives it.

The device runs the detector and the tracker once per sampled frame; the
result travels beside the frame into the session's fan-out, so the status
page, the metrics, MQTT and every model-facing tool read the same numbers and
no consumer runs the detector again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from device.vision.frame import Frame
from models.detections import Detections

TrackState = Literal["tentative", "confirmed", "lost"]
Anchor = Literal["feet", "center"]
# The camera of a device that names none (``device/config/cameras.py``: the same name).
MAIN_CAMERA = "main"


@dataclass(frozen=True)
class Track:
    """One person the tracker follows (``device/vision/tracker.py``).

    ``id`` is stable while the person is in view (0 while the track is still
    tentative: not yet a person); ``box`` is the matched box in this frame, or
    the predicted one while ``seen`` is false; times are media times.
    """

    id: int
    key: int  # unique to this track for the run, tentative or not
    box: tuple[float, float, float, float]
    score: float
    state: TrackState
    seen: bool
    since: float
    last_seen: float
    confident_at: float  # the last time a box at the detector threshold matched

    @property
    def confirmed(self) -> bool:
        return self.state != "tentative"

    def anchor(self, where: Anchor = "feet") -> tuple[float, float]:
        """The point that crosses lines and stands in zones (pixels)."""
        x1, y1, x2, y2 = self.box
        return ((x1 + x2) / 2, y2 if where == "feet" else (y1 + y2) / 2)


@dataclass(frozen=True)
class LineTotals:
    """People who crossed a named line so far in this run (``in``: to its positive side)."""

    name: str
    entered: int = 0
    exited: int = 0
    last: Literal["in", "out"] | None = None


@dataclass(frozen=True)
class ZoneState:
    """People in a named zone now, and how many of them stayed longer than its dwell time.

    ``dwelling`` is always among ``people``: those inside now who stayed that long.
    """

    name: str
    people: int | None  # counted like the device's count; None before the first frame
    dwelling: int = 0
    longest_s: float = 0.0
    dwell_s: float | None = None
    stays: tuple[float, ...] = ()  # seconds each person inside has been there


@dataclass(frozen=True, eq=False)
class Percept:
    """Perception's result for one frame.

    ``raw`` is how many people the detector found in this frame; ``count`` is
    the device's count after it (what every output reports): the number of
    ``people``, the tracks that count as in view now (``device/vision/presence.py``),
    and ``changed`` says this frame changed that count (from ``previous``).
    ``error`` is set (and the detections are empty) when the frame could not be
    used; the count then stands as it was. ``tracks`` are all the tracker's
    tracks after this frame; ``lines`` and ``zones`` the configured
    lines' totals and zones' states after it. ``gated``: the motion gate saw
    nothing move, so the detector did not run on this frame: the detections
    (and ``raw``) are the last detector run's, held at this frame's time, and
    ``detect_ms`` is 0. ``motion`` is the share of the picture that changed
    (None: no motion test, or nothing yet to compare with).
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
    tracks: tuple[Track, ...] = ()
    lines: Mapping[str, LineTotals] = field(default_factory=dict)
    zones: Mapping[str, ZoneState] = field(default_factory=dict)
    gated: bool = False
    motion: float | None = None
    people: tuple[Track, ...] = ()  # who the count counts (``device/vision/presence.py``)
    camera: str = MAIN_CAMERA  # whose frame it is

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
    camera: str = MAIN_CAMERA


# What perception publishes, in frame order: a percept per frame it looked at, and the
# count becoming unknown (``device/bus.py``'s percept channel carries both).
Perceived = Percept | CountUnknown

# The newest percept of a running source, or None (nothing yet, or the source is down).
CurrentPercept = Callable[[], Percept | None]

__all__ = [
    "MAIN_CAMERA",
    "Anchor",
    "CountUnknown",
    "CurrentPercept",
    "LineTotals",
    "Perceived",
    "Percept",
    "Track",
    "TrackState",
    "ZoneState",
]
