"""Synthetic percepts for tests: what perception would have made of a frame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from device.vision.frame import Frame
from device.vision.percept import MAIN_CAMERA, LineTotals, Percept, Track, ZoneState
from models.detections import Detections


def a_track(
    box: Sequence[float],
    *,
    id: int = 1,
    key: int | None = None,
    state: str = "confirmed",
    seen: bool = True,
    score: float = 0.9,
    t: float = 0.0,
) -> Track:
    """One track as the tracker hands it over (``t``: when it was last seen, and sure of)."""
    return Track(
        id=id,
        key=key if key is not None else id,
        box=(float(box[0]), float(box[1]), float(box[2]), float(box[3])),
        score=score,
        state=state,  # type: ignore[arg-type]
        seen=seen,
        since=0.0,
        last_seen=t,
        confident_at=t,
    )


def people_tracks(boxes: Sequence[Sequence[float]], t: float = 0.0) -> tuple[Track, ...]:
    """Each box as a confirmed person seen in this frame (ids 1, 2, ...)."""
    return tuple(
        Track(
            id=i + 1,
            key=i + 1,
            box=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
            score=0.9,
            state="confirmed",
            seen=True,
            since=t,
            last_seen=t,
            confident_at=t,
        )
        for i, b in enumerate(boxes)
    )


def make_percept(
    boxes: Sequence[Sequence[float]] = (),
    *,
    count: int | None = None,
    previous: int | None = None,
    t: float = 0.0,
    seq: int = 1,
    image: np.ndarray | None = None,
    detect_ms: float = 1.0,
    error: str | None = None,
    source: str = "test",
    tracks: Sequence[Track] | None = None,
    lines: Mapping[str, LineTotals] | None = None,
    zones: Mapping[str, ZoneState] | None = None,
    raw: int | None = None,
    camera: str = MAIN_CAMERA,
) -> Percept:
    """A percept of ``image`` (a blank 100x200 frame by default) with these person boxes.

    ``count`` defaults to the number of boxes; ``tracks`` to each box as a confirmed
    person (``people_tracks``), all of them counted (``people``: the confirmed ones seen);
    ``lines`` and ``zones`` (the scene after this frame) to none.
    """
    if image is None:
        image = np.zeros((100, 200, 3), np.uint8)
    detections = Detections(
        np.asarray([list(b) for b in boxes], np.float32).reshape(-1, 4),
        np.full(len(boxes), 0.9, np.float32),
    )
    tracks = people_tracks(boxes, t) if tracks is None else tuple(tracks)
    return Percept(
        frame=Frame(image, t_media=t, index=seq, source=source),
        detections=detections,
        raw=len(boxes) if raw is None else raw,
        count=len(boxes) if count is None else count,
        previous=previous,
        changed=False,
        detect_ms=detect_ms,
        seq=seq,
        error=error,
        tracks=tracks,
        lines=dict(lines or {}),
        zones=dict(zones or {}),
        people=tuple(t for t in tracks if t.state == "confirmed" and t.seen),
        camera=camera,
    )


__all__ = ["a_track", "make_percept", "people_tracks"]
