"""The frame the status page shows: boxes, track ids, lines and zones drawn on a copy.

What is drawn, and why it looks the way it does:

- a person the count counts is a thick green box with the track's id (``#7``):
  the same person keeps the same number frame to frame; one the detector
  missed in this frame but still counted (hidden behind the post for a moment)
  is a thin green box where they are expected, ``#7?``; someone counted on
  sight before their track is confirmed is ``new``;
- a detector box that is not a counted person (a track still tentative, or
  a box the tracker did not take) is a thin grey box with its score, so one
  can see what the detector found without mistaking it for the count;
- a line is drawn from A to B with an arrow to its ``in`` side (the side a
  crossing counted as ``in`` goes to) and its ``N in / M out`` totals beside it;
- a zone is a tinted polygon with its count and how many are dwelling
  (``?`` while unknown).

The count itself is not drawn: the page shows it beside the image from the
same state as its big number, so the two can never disagree. The banner says
which frame this is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from device.events import SceneChanged
from device.vision.percept import LineTotals, Percept, Track, ZoneState
from models.detections import pairwise_iou

Point = tuple[float, float]

BOX_COLOR = (60, 200, 60)  # BGR: a confirmed person
DETECTION_COLOR = (170, 170, 170)  # a detector box that is not (yet) a confirmed person
LINE_COLOR = (0, 215, 255)  # yellow: lines stand out against people and zones
ZONE_COLOR = (255, 150, 40)  # blue
ZONE_ALPHA = 0.25  # tinted, so the people inside stay visible
SAME_PERSON_IOU = 0.7  # a detector box this close to a person's box is that person's


@dataclass(frozen=True)
class SceneGeometry:
    """Where the configured lines (A, B) and zones (a polygon) are, normalised 0..1."""

    lines: Mapping[str, tuple[Point, Point]] = field(default_factory=dict)
    zones: Mapping[str, tuple[Point, ...]] = field(default_factory=dict)

    @classmethod
    def edited(cls, event: SceneChanged) -> SceneGeometry:
        """The scene an edit made (``device/app/scene/editor.py``)."""
        return cls(
            lines={n: (_xy(p[0]), _xy(p[1])) for n, p in event.lines.items()},
            zones={n: tuple(_xy(p) for p in z["points"]) for n, z in event.zones.items()},
        )


def _xy(point: Sequence[float]) -> Point:
    return (float(point[0]), float(point[1]))


@dataclass(frozen=True)
class DisplayFrame:
    """A detector frame with what perception made of it, as the page will show it."""

    seq: int
    image: np.ndarray  # BGR, never modified (the pipeline may still hold it)
    boxes: np.ndarray  # (N, 4) x1, y1, x2, y2 in image pixels
    scores: np.ndarray
    count: int | None  # the device's count after this frame
    raw: int  # people the detector found in this frame
    at: float  # telemetry's monotonic time of arrival
    tracks: tuple[Track, ...] = ()
    people: tuple[Track, ...] = ()  # the tracks the count counts
    frame_index: int = 0  # the frame's index in its source
    t_media: float = 0.0
    lines: Mapping[str, LineTotals] = field(default_factory=dict)
    zones: Mapping[str, ZoneState] = field(default_factory=dict)
    geometry: SceneGeometry = field(default_factory=SceneGeometry)

    @classmethod
    def of(
        cls, percept: Percept, seq: int, geometry: SceneGeometry, at: float = 0.0
    ) -> DisplayFrame:
        """What perception made of a frame, to draw (the page, a snapshot, a look)."""
        return cls(
            seq,
            percept.frame.image,
            np.asarray(percept.detections.boxes, dtype=np.float32).reshape(-1, 4),
            np.asarray(percept.detections.scores, dtype=np.float32).reshape(-1),
            percept.count,
            percept.raw,
            at,
            tracks=percept.tracks,
            people=percept.people,
            frame_index=percept.frame.index,
            t_media=percept.t_media,
            lines=percept.lines,
            zones=percept.zones,
            geometry=geometry,
        )


def render_jpeg(frame: DisplayFrame, quality: int = 80) -> bytes:
    """The frame with its zones, lines, boxes and count drawn on a copy, as JPEG (off the loop)."""
    import cv2

    image = frame.image.copy()
    height, width = image.shape[:2]
    thickness = max(1, round(max(height, width) / 400))
    scale = max(0.4, max(height, width) / 1600)  # text stays legible on big frames
    # Zones first: their tint goes under the lines and boxes.
    for name, polygon in frame.geometry.zones.items():
        _draw_zone(image, name, polygon, frame.zones.get(name), thickness, scale)
    for name, (a, b) in frame.geometry.lines.items():
        _draw_line(image, name, a, b, frame.lines.get(name), thickness, scale)
    people = list(frame.people)
    person_boxes = np.asarray([t.box for t in people if t.seen], np.float64).reshape(-1, 4)
    boxes = np.asarray(frame.boxes, np.float64).reshape(-1, 4)
    overlaps = pairwise_iou(boxes, person_boxes)
    taken: list[bool] = [bool((row >= SAME_PERSON_IOU).any()) for row in overlaps]
    for box, score, is_person in zip(boxes, frame.scores, taken, strict=True):
        if is_person:
            continue  # drawn below, as the person it is
        x1, y1, x2, y2 = (round(float(v)) for v in box)
        cv2.rectangle(image, (x1, y1), (x2, y2), DETECTION_COLOR, 1)
        _label(image, f"{float(score):.2f}", (x1 + 2, max(12, y1 - 4)), DETECTION_COLOR, scale)
    for track in people:
        x1, y1, x2, y2 = (round(v) for v in track.box)
        cv2.rectangle(image, (x1, y1), (x2, y2), BOX_COLOR, thickness + 1 if track.seen else 1)
        name = "new" if not track.id else f"#{track.id}" + ("" if track.seen else "?")
        _label(image, name, (x1 + 2, max(12, y1 - 4)), BOX_COLOR, scale)
    # Which frame this is, bottom left: the page puts the count top left, over the image.
    text = f"frame {frame.frame_index} - {frame.t_media:.1f} s"
    top = max(0, height - 22)
    cv2.rectangle(image, (0, top), (min(width, 8 + 8 * len(text)), height), (0, 0, 0), -1)
    cv2.putText(
        image, text, (6, top + 16), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1, cv2.LINE_AA
    )
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return bytes(data.tobytes())


def _text_size(text: str, scale: float) -> tuple[int, int]:
    import cv2

    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    return w, h + base


def _label(
    image: np.ndarray, text: str, origin: tuple[int, int], color: tuple[int, int, int], scale: float
) -> None:
    """Text on a dark backing, moved inside the frame (a label cut off says nothing).

    ``origin`` is the left end of the text's baseline, as for ``cv2.putText``.
    """
    import cv2

    height, width = image.shape[:2]
    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    x = min(max(0, origin[0]), max(0, width - w - 2))
    y = min(max(h + 2, origin[1]), height - base - 1)
    cv2.rectangle(image, (x - 1, y - h - 2), (x + w + 1, y + base), (0, 0, 0), -1)
    cv2.putText(image, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, color, 1, cv2.LINE_AA)


def _pixels(point: Point, width: int, height: int) -> tuple[int, int]:
    # As perception scales them (x * width), kept on the image's last row or column.
    return min(width - 1, round(point[0] * width)), min(height - 1, round(point[1] * height))


def _draw_line(
    image: np.ndarray,
    name: str,
    a: Point,
    b: Point,
    totals: LineTotals | None,
    thickness: int,
    scale: float,
) -> None:
    import cv2

    height, width = image.shape[:2]
    pa, pb = _pixels(a, width, height), _pixels(b, width, height)
    cv2.line(image, pa, pb, LINE_COLOR, thickness + 1, cv2.LINE_AA)
    _label(image, "A", (pa[0] + 3, pa[1] + 4), LINE_COLOR, scale)
    _label(image, "B", (pb[0] + 3, pb[1] + 4), LINE_COLOR, scale)
    # The in side is where (B - A) x (P - A) > 0 in image coordinates (device/vision/lines.py):
    # along the normal (-(By - Ay), Bx - Ax).
    dx, dy = pb[0] - pa[0], pb[1] - pa[1]
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length
    mid = ((pa[0] + pb[0]) / 2, (pa[1] + pb[1]) / 2)
    reach = max(18.0, 0.06 * min(width, height))
    tip = (round(mid[0] + nx * reach), round(mid[1] + ny * reach))
    start = (round(mid[0]), round(mid[1]))
    cv2.arrowedLine(image, start, tip, LINE_COLOR, thickness + 1, cv2.LINE_AA, tipLength=0.35)
    _beside(image, "in", (tip[0] + nx * 4, tip[1] + ny * 4), (nx, ny), LINE_COLOR, scale)
    entered, exited = (totals.entered, totals.exited) if totals is not None else (0, 0)
    # The totals go on the out side, away from the arrow, so the two never overlap.
    _beside(
        image, f"{name}: {entered} in / {exited} out", mid, (-nx, -ny), LINE_COLOR, scale, gap=6
    )


def _beside(
    image: np.ndarray,
    text: str,
    point: tuple[float, float],
    direction: tuple[float, float],
    color: tuple[int, int, int],
    scale: float,
    gap: float = 0.0,
) -> None:
    """A label just off ``point`` in ``direction`` (a unit vector): its box never covers it."""
    w, h = _text_size(text, scale)
    # The label's centre, pushed out until its box clears the point by ``gap``.
    push = gap + abs(direction[0]) * w / 2 + abs(direction[1]) * h / 2 + 2
    cx, cy = point[0] + direction[0] * push, point[1] + direction[1] * push
    _label(image, text, (round(cx - w / 2), round(cy + h / 2) - 2), color, scale)


def _draw_zone(
    image: np.ndarray,
    name: str,
    polygon: tuple[Point, ...],
    state: ZoneState | None,
    thickness: int,
    scale: float,
) -> None:
    import cv2

    height, width = image.shape[:2]
    points = np.asarray([_pixels(p, width, height) for p in polygon], np.int32)
    # Blend only the polygon's bounding box: a zone is usually a small part of the frame.
    x0, y0 = points.min(axis=0)
    x1, y1 = points.max(axis=0) + 1
    region = image[y0:y1, x0:x1]
    tinted = region.copy()
    cv2.fillPoly(tinted, [points - np.array([x0, y0], np.int32)], ZONE_COLOR)
    cv2.addWeighted(tinted, ZONE_ALPHA, region, 1 - ZONE_ALPHA, 0, dst=region)
    cv2.polylines(image, [points], True, ZONE_COLOR, thickness, cv2.LINE_AA)
    if state is None or state.people is None:
        text = f"{name}: ?"
    else:
        dwelling = f" ({state.dwelling} dwelling)" if state.dwelling else ""
        text = f"{name}: {state.people}{dwelling}"
    top = points[np.argmin(points[:, 1])]  # the zone's top vertex: the label sits above it
    _label(image, text, (int(top[0]) + 3, int(top[1]) - 4), ZONE_COLOR, scale)


__all__ = [
    "BOX_COLOR",
    "DETECTION_COLOR",
    "LINE_COLOR",
    "ZONE_COLOR",
    "DisplayFrame",
    "SceneGeometry",
    "render_jpeg",
]
