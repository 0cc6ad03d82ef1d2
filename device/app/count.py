"""``lookout count``: the detector over a video, an image or a folder of images.

A video's frames follow each other, so its people are tracked and counted as
the device counts them (``count``: the smoothed number of confirmed people;
``raw``: the detector's boxes in the frame); the images of a folder are
unrelated photos, so each is counted on its own (its boxes) and named in its
result. An image that cannot be read is said (and
makes the exit code 1), never skipped silently.

Frames further apart than a track survives unseen (``--every`` large for the
video's rate) cannot be linked: the tracked count would report nobody, since no
one is seen twice in time to be confirmed. Then each frame is counted on its
own, like a folder's images, and that is said once.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, TextIO

from device.sources import FrameSource, ImageFolderSource, SourceError, UnreadableFrame
from device.tracker import Tracker, TrackerConfig, can_follow
from models.detections import Detector
from tools.percept import people_seen
from tools.smoothing import CountSmoother

EXIT_OK, EXIT_SOME_FAILED = 0, 1


def count_frames(
    source: FrameSource,
    detector: Detector,
    *,
    every: int = 1,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    threshold: float | None = None,
) -> int:
    """Print one result per processed frame or image; returns the exit code.

    ``threshold``: boxes below it (the detector may report lower ones) only keep tracks.
    """
    folder = isinstance(source, ImageFolderSource)
    high = threshold if threshold is not None else 1e-3
    config = TrackerConfig(high=high, low=min(TrackerConfig.low, high))
    tracker = Tracker(config)
    fps = getattr(source, "fps", None)
    spacing = every / fps if fps else None
    apart = not folder and spacing is not None and not can_follow(spacing, config)
    if apart:
        print(
            f"lookout: frames {spacing:g} s apart are too far apart to track people from one "
            f"to the next (at most {config.max_lost_s:g} s): each is counted on its own",
            file=err,
        )
    smoother = None if folder or apart else CountSmoother()
    failed = 0
    seen = 0
    index = 0
    try:
        while True:
            try:
                frame = source.read()
            except UnreadableFrame as exc:
                failed += 1
                seen += 1
                print(f"lookout: {exc}", file=err)
                index = exc.index + 1
                continue
            except SourceError as exc:
                failed += 1
                print(f"lookout: frame {index}: {exc}", file=err)
                index += 1
                continue
            if frame is None:
                break
            index = frame.index + 1
            if frame.index % every:
                continue
            seen += 1
            found = detector.detect(frame.image)
            detections = found.at_least(threshold) if threshold is not None else found
            raw = len(detections)
            record: dict[str, Any] = {
                "frame": frame.index,
                "t": round(frame.t_media, 3),
                "raw": raw,
            }
            if smoother is not None:
                tracks = tracker.update(found, frame.t_media)
                people = len(people_seen(tracks))
                smoother.update(people, frame.t_media)
                record["count"] = smoother.reported
            elif apart:
                record["count"] = raw  # nothing to link it to: the frame on its own
            else:
                assert isinstance(source, ImageFolderSource)
                record["file"] = source.path_of(frame.index).name
                record["count"] = raw  # one photo: nothing to smooth against
            record["boxes"] = [
                [round(float(v), 1) for v in box] + [round(float(score), 3)]
                for box, score in zip(detections.boxes, detections.scores, strict=True)
            ]
            out.write(_line(record, as_json) + "\n")
            out.flush()
    except BrokenPipeError:
        # The reader left (``| head``): stop like any Unix tool, and no flush at exit may
        # print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
        return EXIT_OK
    if failed:
        what = "images" if folder else "frames"
        print(f"lookout: {failed} of {seen} {what} could not be read", file=err)
        return EXIT_SOME_FAILED
    return EXIT_OK


def _line(record: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(record, separators=(",", ":"))
    if "file" in record:
        people = "person" if record["raw"] == 1 else "people"
        return f"{record['file']}: {record['raw']} {people}"
    return (
        f"frame {record['frame']:6d}  t={record['t']:8.2f}s  raw={record['raw']:3d}  "
        f"count={record['count']}"
    )


__all__ = ["count_frames"]
