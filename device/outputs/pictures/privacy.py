"""What a snapshot may show of the people in it: ``--snapshots-privacy none|faces|boxes``.

A snapshot is kept for days, in a folder anyone with the device's disk can read, so a shop
may be allowed to keep where people were but not who they were:

- ``none``: the frame as the camera saw it (the boxes, ids, lines and zones drawn on it).
- ``faces``: nobody in the picture can be recognised by the face. The rule, for every box
  the picture is drawn from (each detection at the threshold, and each track, tentative or
  coasting where the person is expected), so that whoever gets a box gets a hidden head:
  the top quarter of the box, widened by a tenth of its width on each side and raised by a
  twentieth of its height (clipped to the frame), is pixelated into blocks of a sixteenth
  of the box's height, then smoothed. Why those numbers: a standing adult's head is about
  an eighth of their height, and a pedestrian box runs from the top of the hair to the
  feet; a quarter covers the head and neck with room for a person leaning or walking
  towards the camera, for a box that is a few pixels off (the detector's box, a coasting
  track's prediction) and for someone cut at the bottom of the frame, whose head is then a
  larger share of the box. A block of a sixteenth of the height leaves a head about two
  blocks tall at any distance: a colour, no features. The rest of the frame is left as
  it was, so the scene stays useful.
  Not covered: a person the detector does not find at all (mostly hidden, or below the
  threshold and not tracked) gets no box and so no blur; where that must never happen,
  ``boxes`` is the setting. OpenCV's Haar face cascade is not used as a second net: the
  OpenCV Lookout installs (opencv-python-headless 5) no longer ships the cascades
  (``cv2.data.haarcascades`` is empty and ``cv2.CascadeClassifier`` is gone), and a
  privacy rule that held on some installs and not others would be no rule.
- ``boxes``: no camera pixel at all. The picture is the boxes, ids, lines and zones drawn
  on a plain dark grey canvas of the frame's size: where people were, not what they looked
  like.

The pixels are changed on a copy, in the snapshot writer's thread (``Snapshots._work``),
never on the event loop; the live page (``page/render.py``, ``Telemetry``) is not affected.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from device.config.values import SnapshotPrivacy
from device.outputs.page.render import DisplayFrame

HEAD_SHARE = 0.25  # of a person's box, from its top: the head and neck
HEAD_ABOVE = 0.05  # of the box's height above its top: a box that cuts the hair
HEAD_SIDE = 0.10  # of the box's width on each side: a head turned or leaning out
BLOCKS_PER_HEIGHT = 16  # pixelation block: the box's height / 16 (a head: ~2 blocks)
MIN_BLOCK = 4  # pixels: even a tiny far-away person gets real blocks
BACKGROUND = (64, 64, 64)  # BGR: dark grey, neutral; every drawn colour stands out on it

Box = tuple[float, float, float, float]
Region = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels, x1 and y1 exclusive


def head_region(box: Box, width: int, height: int) -> Region | None:
    """The part of ``box`` (x1, y1, x2, y2 in pixels) hidden as the head, in the frame."""
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    if not (w > 0 and h > 0) or not all(math.isfinite(v) for v in box):
        return None
    x0 = max(0, math.floor(x1 - HEAD_SIDE * w))
    x_end = min(width, math.ceil(x2 + HEAD_SIDE * w))
    y0 = max(0, math.floor(y1 - HEAD_ABOVE * h))
    y_end = min(height, math.ceil(y1 + HEAD_SHARE * h))
    if x_end <= x0 or y_end <= y0:
        return None  # the head is outside the picture
    return x0, y0, x_end, y_end


def person_boxes(frame: DisplayFrame) -> list[Box]:
    """Every box the picture is drawn from: whoever is drawn is hidden."""
    boxes: list[Box] = [
        (float(b[0]), float(b[1]), float(b[2]), float(b[3]))
        for b in np.asarray(frame.boxes, np.float64).reshape(-1, 4)
    ]
    boxes += [track.box for track in (*frame.tracks, *frame.people)]
    return boxes


def hide_heads(image: np.ndarray, boxes: Iterable[Box]) -> list[Region]:
    """Pixelate the head region of each box in ``image`` (in place); the regions done."""
    import cv2

    height, width = image.shape[:2]
    done: list[Region] = []
    for box in boxes:
        region = head_region(box, width, height)
        if region is None:
            continue
        x0, y0, x1, y1 = region
        block = max(MIN_BLOCK, round((box[3] - box[1]) / BLOCKS_PER_HEIGHT))
        patch = image[y0:y1, x0:x1]
        cols, rows = max(1, -(-(x1 - x0) // block)), max(1, -(-(y1 - y0) // block))
        # Each block becomes its mean colour (what a face was is gone), then the block
        # edges are smoothed so the picture reads as a blur, not as a pattern.
        small = cv2.resize(patch, (cols, rows), interpolation=cv2.INTER_AREA)
        blocks = cv2.resize(small, (x1 - x0, y1 - y0), interpolation=cv2.INTER_NEAREST)
        side = 2 * (block // 2) + 1
        patch[...] = cv2.GaussianBlur(blocks, (side, side), 0, borderType=cv2.BORDER_REPLICATE)
        done.append(region)
    return done


def private_frame(frame: DisplayFrame, privacy: SnapshotPrivacy) -> DisplayFrame:
    """The frame a snapshot is drawn from under ``privacy`` (a copy; ``frame`` is kept)."""
    if privacy == "none":
        return frame
    if privacy == "boxes":
        import cv2

        # Filled by OpenCV: numpy's broadcast of a BGR tuple took 3 ms a picture here.
        canvas = np.empty_like(frame.image)
        height, width = canvas.shape[:2]
        cv2.rectangle(canvas, (0, 0), (width, height), BACKGROUND, -1)
        return dataclasses.replace(frame, image=canvas)
    image = frame.image.copy()  # the pipeline may still hold the frame's own pixels
    hide_heads(image, person_boxes(frame))
    return dataclasses.replace(frame, image=image)


__all__ = [
    "BACKGROUND",
    "HEAD_SHARE",
    "head_region",
    "hide_heads",
    "person_boxes",
    "private_frame",
]
