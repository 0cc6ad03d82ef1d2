"""Who is in view now: the one rule every count uses (the device's, a zone's, a region's).

The count is read off the tracker's state at each frame, not smoothed after
it: a second smoothing over the tracker's output (a median, then a hold)
made the count trail the scene by seconds and, when the number wavered,
kept an old value on show. What the tracker knows already answers the two
questions a smoothing was for:

- *A single missed detection must not drop a person.* A confirmed person the
  detector missed in this frame still counts while their track coasts, for
  ``coast_s`` (one second, or one detection period when detections are
  further apart), as long as where they are predicted to be is still in the
  picture. Someone who walks out of the frame stops counting at once;
  someone hidden by the lamp post for a second does not.
- *A single false box must not add a person.* A new track counts from its
  first frame only when the detector is sure of it (``sure_score``, the score
  at which the tracker confirms someone on sight); otherwise from its
  confirmation, one detection later.

And one the smoothing could not: a confirmed track that only doubtful boxes
(below the detector threshold) have matched for ``doubt_s`` no longer counts.
A person who left can hand their track to a static look-alike nearby (a sign
post scoring 0.3): it would otherwise be counted for as long as the video runs.

So a change of the scene shows in the count within one or two detections
(well under a second at the default rates), and nothing can keep an old
value on show: the count is recomputed from scratch at every frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from device.vision.percept import Track


@dataclass(frozen=True)
class PresenceRule:
    coast_s: float = 1.0  # a missed confirmed person still counts this long (at least)
    doubt_s: float = 2.0  # ...unless only doubtful boxes matched them for this long
    sure_score: float = 0.6  # a new track this sure counts on sight

    def __post_init__(self) -> None:
        if self.coast_s < 0 or self.doubt_s < 0:
            raise ValueError("coast_s and doubt_s must not be negative")
        if not 0 < self.sure_score <= 1:
            raise ValueError("sure_score must be in (0, 1]")

    def for_interval(self, interval_s: float) -> PresenceRule:
        """The rule for detections ``interval_s`` apart: a miss must be bridged."""
        if interval_s <= self.coast_s:
            return self
        return PresenceRule(interval_s, max(self.doubt_s, interval_s), self.sure_score)

    def people(
        self, tracks: Sequence[Track], t: float, shape: tuple[int, ...]
    ) -> tuple[Track, ...]:
        """The tracks that count as people in view at media time ``t`` in a frame of ``shape``."""
        height, width = shape[:2]
        counted: list[Track] = []
        for track in tracks:
            if track.state == "tentative":
                if track.seen and track.score >= self.sure_score:
                    counted.append(track)
                continue
            if t - track.confident_at > self.doubt_s + 1e-6:
                continue
            if track.seen or (
                t - track.last_seen <= self.coast_s + 1e-6 and _in_view(track, width, height)
            ):
                counted.append(track)
        return tuple(counted)


def each_detection(tracks: Sequence[Track], threshold: float) -> tuple[Track, ...]:
    """Frames that are not linked (unrelated photos, detections too far apart): everyone
    the detector found at the threshold in this frame, on their own."""
    return tuple(t for t in tracks if t.seen and t.score >= threshold)


def _in_view(track: Track, width: int, height: int) -> bool:
    """Whether a coasting track's predicted centre is still in the picture."""
    x1, y1, x2, y2 = track.box
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return 0 <= cx <= width and 0 <= cy <= height


__all__ = ["PresenceRule", "each_detection"]
