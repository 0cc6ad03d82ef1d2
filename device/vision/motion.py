"""The motion gate: the detector runs when something moves, not on a scene where nothing does.

A kiosk or doorway camera looks at an empty or unchanging scene most of the
day, and the person detector is nearly all of what the device costs. Before
the detector, every sampled frame gets a cheap motion test (``MotionDetector``:
one colour plane at a stride, area-averaged down to ~160 px wide, compared
with a running background): about 0.1 ms on a 768x576 frame (0.2 ms on a
busy 2-core machine), so it runs on the event loop. ``MotionGate`` turns
those measurements into the decision for each frame on the detection grid:

- something moved (now, or within ``hangover_s`` before): detect, at the
  configured rate, exactly as without the gate;
- nothing moved: do not detect; perception keeps the last detections standing
  (``device/vision/perception.py``), with a *heartbeat* detection every
  ``heartbeat_s`` so a person standing perfectly still is not lost and a wrong
  count is corrected. A heartbeat that finds the people changed counts as
  motion: the detector then runs at full rate until the scene settles again.

All times are the frames' media times, so a replay gives the same decisions
at any pace and tests need no clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]


@dataclass(frozen=True)
class MotionConfig:
    """What counts as motion, and how often a still scene is looked at anyway."""

    # Share of the small picture that must differ from the background. 0.1 % is ~28
    # pixels of 192x144: less than a small, distant person (the sample video never has
    # less than ~0.8 % changing: someone always walks), far more than noise changes.
    threshold: float = 0.001
    heartbeat_s: float = 10.0  # media seconds between detections of a still scene
    # Grey levels a pixel must differ from the background: above compression and
    # sensor noise once area-averaged, below a person against pavement or a wall.
    pixel_delta: float = 25.0
    # Time constant of the running background (media seconds): slow light changes
    # and a person who has stood still for a few seconds become background.
    background_s: float = 2.0
    # The detector keeps its full rate this long after the last motion, so that what
    # the last movement started (a new person's confirmation, a lost track coasting,
    # the count's hold) is settled by real detections before the scene is held.
    hangover_s: float = 2.0
    width: int = 160  # the small picture the test runs on is at least this wide

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError("threshold must be in (0, 1)")
        if not self.heartbeat_s > 0 or not self.background_s > 0 or self.hangover_s < 0:
            raise ValueError("heartbeat_s and background_s must be positive, hangover_s >= 0")
        if not 0 < self.pixel_delta < 255 or self.width < 8:
            raise ValueError("pixel_delta must be in (0, 255) and width at least 8")


def small_plane(image: np.ndarray, width: int) -> F32:
    """One plane of ``image`` (the green one of BGR: most of the luminance), ``width`` or a
    little more pixels wide.

    A stride first (a view, no copy), then a 2x2 area average: the stride alone
    would keep single noisy pixels, the average evens sensor noise out. Both
    by whole factors, which is OpenCV's fast path: ~0.1 ms at 768x576, where
    a full colour conversion and resize to 160x120 takes ~1 ms.
    """
    plane = image[:, :, 1] if image.ndim == 3 else image
    factor = max(1, plane.shape[1] // width)
    average = 2 if factor >= 2 else 1
    step = max(1, factor // average)
    if step > 1:
        plane = plane[::step, ::step]
    if average > 1:
        h, w = plane.shape[0] // average, plane.shape[1] // average
        if h and w:
            plane = cv2.resize(
                plane[: h * average, : w * average], (w, h), interpolation=cv2.INTER_AREA
            )
    return np.asarray(plane, np.float32)


class MotionDetector:
    """The share of a frame that differs from a running average of the frames before it."""

    def __init__(self, config: MotionConfig | None = None) -> None:
        self.config = config or MotionConfig()
        self._background: F32 | None = None
        self._last_t: float | None = None

    def reset(self) -> None:
        self._background = None
        self._last_t = None

    def measure(self, image: np.ndarray, t: float) -> float | None:
        """The changed share of ``image`` at media time ``t``; None when there is nothing to
        compare with (the first frame, a new frame size, time that went back)."""
        small = small_plane(image, self.config.width)
        background, last_t = self._background, self._last_t
        self._last_t = t
        if background is None or background.shape != small.shape or last_t is None or t < last_t:
            self._background = small
            return None
        changed = cv2.absdiff(small, background) > self.config.pixel_delta
        share = float(np.count_nonzero(changed)) / changed.size
        # The background follows the scene by time, not by frame, so it absorbs a
        # person who stopped equally fast at 2 or at 10 samples a second.
        alpha = 1.0 - math.exp(-max(t - last_t, 0.0) / self.config.background_s)
        cv2.accumulateWeighted(small, background, alpha)
        return share


@dataclass
class GateStats:
    tests: int = 0  # frames the motion test ran on
    moving: int = 0  # of them, frames with motion (or nothing to compare with)
    held: int = 0  # frames on the detection grid not detected: nothing moved
    heartbeats: int = 0  # detections made only because the heartbeat was due


class MotionGate:
    """Whether a frame on the detection grid needs the detector (``decide``), from the motion
    tests of every sampled frame (``observe``) and what the detections found (``ran``)."""

    def __init__(self, config: MotionConfig | None = None) -> None:
        self.config = config or MotionConfig()
        self.detector = MotionDetector(self.config)
        self.stats = GateStats()
        self.last_share: float | None = None
        self._motion_at: float | None = None  # media time of the newest frame that moved
        self._detected_at: float | None = None  # media time of the newest detection

    def reset(self) -> None:
        """Start afresh (the count was given up): the next frame is detected."""
        self.detector.reset()
        self.last_share = None
        self._motion_at = None
        self._detected_at = None

    def observe(self, image: np.ndarray, t: float) -> float | None:
        """Run the motion test on a sampled frame; returns the changed share (None: no
        background yet, which counts as motion)."""
        share = self.detector.measure(image, t)
        self.stats.tests += 1
        self.last_share = share
        # Nothing to compare with: at the start the first detection covers it; later
        # (a new frame size) the picture may have changed entirely, so it is motion.
        unknown = share is None and self._detected_at is not None
        if unknown or (share is not None and share >= self.config.threshold):
            self.stats.moving += 1
            self._motion_at = t
        return share

    def decide(self, t: float) -> str | None:
        """Why the frame at ``t`` must be detected ("start", "motion", "heartbeat"), or None
        when nothing moved and the last detections stand; counted in ``stats``."""
        detected_at = self._detected_at
        if detected_at is None or t < detected_at:
            return "start"
        motion_at = self._motion_at
        if motion_at is not None and motion_at <= t and t - motion_at <= self.config.hangover_s:
            return "motion"
        if t - detected_at >= self.config.heartbeat_s - 1e-6:
            self.stats.heartbeats += 1
            return "heartbeat"
        self.stats.held += 1
        return None

    def ran(self, t: float, *, changed: bool) -> None:
        """A detection was made at ``t``; ``changed``: it found other people than the held
        ones (a heartbeat that did is treated as motion: full rate until it settles)."""
        self._detected_at = t
        if changed:
            self._motion_at = t


__all__ = ["GateStats", "MotionConfig", "MotionDetector", "MotionGate", "small_plane"]
