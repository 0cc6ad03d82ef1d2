"""``lookout count``: perception over a video, an image or a folder of images, frame by frame.

It perceives exactly as ``lookout run`` does (``device/vision/perception.py``: the same
detection grid, motion gate, tracker and presence rule, on frames prepared the
same way), so a recording's per-frame counts here are the ones ``lookout run``
reports for the same frames: one JSON object (``--json``) or line per frame
perception looked at, with ``count`` (the device's count) and ``raw`` (the
detector's boxes at the threshold in that frame).

The images of a folder are unrelated photos unless the user says the folder is
a time-lapse (``--timelapse``): each is counted on its own and named in its
result. Frames further apart than a track survives unseen (``--every`` large
for the video's rate) cannot be linked either; then each is counted on its own
too, and that is said once. An image or frame that cannot be read is said (and
makes the exit code 1), never skipped silently.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import anyio

from device.capture import FrameDriver
from device.feeds.in_order import InOrderFeed
from device.sources import (
    FrameSource,
    ImageFolderSource,
    OpenCVSource,
    SourceError,
    UnreadableFrame,
)
from device.vision.percept import Percept
from device.vision.perception import Perception
from device.vision.tracker import TrackerConfig
from live.util.clock import MonotonicClock
from live.util.printable import printable

EXIT_OK, EXIT_SOME_FAILED = 0, 1


async def count_frames(
    source: FrameSource,
    perception: Perception,
    *,
    every: int | None = None,
    max_side: int = 768,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Print one result per frame perceived; returns the exit code.

    ``every``: perceive every Nth frame instead of the frames on the detection grid.
    """
    folder = isinstance(source, ImageFolderSource)
    if not perception.linked and not folder:
        spacing = perception.interval
        print(
            f"lookout: frames {spacing:g} s apart are too far apart to track people from one "
            f"to the next (at most {TrackerConfig.max_lost_s:g} s): each is counted on its own",
            file=err,
        )
    # A folder of images (not one image file): what it holds besides is said, and a tally.
    images = source if isinstance(source, ImageFolderSource) and source.path.is_dir() else None
    if images is not None and images.left_out:
        left = images.left_out
        names = ", ".join(printable(p.name) for p in left[:5])
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        print(
            f"lookout: left out {len(left)} file(s) of {printable(str(images.path))} that are "
            f"not images: {names}{more} (a video is counted on its own: lookout count "
            f"{printable(str(left[0]))})",
            file=err,
        )
    failed = 0
    seen = 0

    def unreadable(index: int, exc: Exception) -> None:
        nonlocal failed, seen
        failed += 1
        # An image the source could not decode was looked at; a read that failed was not.
        seen += isinstance(exc, UnreadableFrame) or not isinstance(exc, SourceError)
        message = str(exc) if isinstance(exc, UnreadableFrame) else f"frame {index}: {exc}"
        print(printable(f"lookout: {message}"), file=err)

    # Every frame goes to perception, whose own grid picks those to look at (as in
    # ``lookout run``); no wall-clock pacing: a recording is counted as fast as it goes.
    driver = FrameDriver(
        InOrderFeed(source, unreadable),
        clock=MonotonicClock(),
        sample_fps=None,
        perceive=perception.process,
        max_side=max_side,
        jpeg_quality=None,
        pace="fast",
        every=every,
        on_unusable=lambda frame, exc: unreadable(frame.index, exc),
    )
    try:
        while (sample := await driver.next()) is not None:
            percept = sample.percept
            if percept is None:
                continue  # off the detection grid, as in lookout run
            seen += 1
            if percept.error is not None:
                failed += 1
                print(printable(f"lookout: frame {percept.frame.index}: {percept.error}"), file=err)
                continue
            name = (
                source.path_of(percept.frame.index).name
                if isinstance(source, ImageFolderSource)
                else None
            )
            out.write(_line(record(percept, name), as_json) + "\n")
            out.flush()
    except BrokenPipeError:
        # The reader left (``| head``): stop like any Unix tool, and no flush at exit may
        # print a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
        return EXIT_OK
    if images is not None:
        # A folder's tally: how many were counted, and what was not (never silently).
        left_out = f"; {len(images.left_out)} file(s) left out" if images.left_out else ""
        print(
            f"lookout: counted {seen - failed} of {images.frame_count} image(s) of "
            f"{printable(str(images.path))}{left_out}",
            file=err,
        )
    if failed:
        what = "images" if folder else "frames"
        print(f"lookout: {failed} of {seen} {what} could not be read", file=err)
        return EXIT_SOME_FAILED
    return EXIT_OK


def perceive_video(
    perception: Perception, path: Path, *, every: int = 1, limit: int | None = None
) -> None:
    """Give ``perception`` every ``every``-th frame of the video at ``path``, from its first,
    up to frame index ``limit`` (not included; None: to the end of the file), in one
    blocking call: what scripts and tests want of a recording (its percepts and events go
    where the perception publishes them). Frames keep their size; none is dropped.

    Raises ValueError when the file cannot be read as a video, or a frame cannot.
    """
    if every < 1:
        raise ValueError(f"every must be 1 or more, not {every}")
    source = OpenCVSource(str(path), clock_now=time.monotonic)

    def unreadable(index: int, exc: Exception) -> None:
        raise ValueError(f"{path}: frame {index}: {exc}")

    async def perceive() -> None:
        driver = FrameDriver(
            InOrderFeed(source, unreadable, until=limit),
            clock=MonotonicClock(),
            sample_fps=None,
            perceive=perception.process,
            max_side=sys.maxsize,
            jpeg_quality=None,
            pace="fast",
            every=every,
            on_unusable=lambda frame, exc: unreadable(frame.index, exc),
        )
        while await driver.next() is not None:
            pass

    try:
        source.open()
    except SourceError as exc:
        raise ValueError(str(exc)) from None
    try:
        anyio.run(perceive)
    finally:
        source.close()


def record(percept: Percept, file: str | None = None) -> dict[str, Any]:
    """What ``lookout count --json`` prints for a frame (``file``: the photo's name)."""
    detections = percept.detections
    data: dict[str, Any] = {
        "frame": percept.frame.index,
        "t": round(percept.t_media, 3),
        "raw": percept.raw,
        "count": percept.count,
    }
    if file is not None:
        data["file"] = file
    if percept.gated:
        data["gated"] = True  # nothing moved: the last detections stand (motion gate)
    if percept.zones:
        data["zones"] = {name: zone.people for name, zone in percept.zones.items()}
    if percept.lines:
        data["lines"] = {
            name: {"in": totals.entered, "out": totals.exited}
            for name, totals in percept.lines.items()
        }
    data["boxes"] = [
        [round(float(v), 1) for v in box] + [round(float(score), 3)]
        for box, score in zip(detections.boxes, detections.scores, strict=True)
    ]
    return data


def _line(data: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(data, separators=(",", ":"))
    if "file" in data:
        people = "person" if data["count"] == 1 else "people"
        return f"{printable(data['file'])}: {data['count']} {people}"
    return (
        f"frame {data['frame']:6d}  t={data['t']:8.2f}s  raw={data['raw']:3d}  "
        f"count={data['count']}"
    )


__all__ = ["count_frames", "perceive_video", "record"]
