"""Would restricting detection to motion regions (Frigate's approach) help Lookout? Measured.

On the sample video at the default detection rate (2 a second: every 5th frame), each
sampled frame gets the motion gate's own test (device/vision/motion.py: the small grey plane
against its running background); the changed pixels' bounding box, grown by a margin, is
the motion region. Then the detector runs twice: on the whole frame (what Lookout does) and
on the region only (cropped, letterboxed to the same 416 px input, boxes mapped back).

Printed: how much of the frame the region covers, the detector's time and CPU per run both
ways, the count error on the hand-counted frames, and the people the whole-frame run finds
(at the threshold) that the region run misses, and the other way round.

    python scripts/bench/motion_regions.py [--margin 0.1] [--every 5]

NanoDet's input is a fixed 416 x 416: a crop costs the network exactly what the whole frame
costs, so regions can only change accuracy (people in a small region are seen larger), and
they lose whoever stands still outside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from machine import describe_cpu  # noqa: E402

from device.app.parts import sample_video  # noqa: E402
from device.vision.motion import MotionConfig, small_plane  # noqa: E402
from models.detections import box_iou  # noqa: E402
from models.detector import PersonDetector  # noqa: E402

THRESHOLD = 0.45


def motion_region(
    small: np.ndarray, background: np.ndarray, shape: tuple[int, int], margin: float
) -> tuple[int, int, int, int] | None:
    """The changed pixels' bounding box in frame pixels, grown by ``margin`` of the frame."""
    changed = cv2.absdiff(small, background) > MotionConfig.pixel_delta
    ys, xs = np.nonzero(changed)
    if len(xs) == 0:
        return None
    h, w = shape
    sx, sy = w / small.shape[1], h / small.shape[0]
    mx, my = margin * w, margin * h
    x1 = int(max(0, xs.min() * sx - mx))
    y1 = int(max(0, ys.min() * sy - my))
    x2 = int(min(w, (xs.max() + 1) * sx + mx))
    y2 = int(min(h, (ys.max() + 1) * sy + my))
    return x1, y1, x2, y2


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--margin", type=float, default=0.1, help="region growth, share of frame")
    ap.add_argument("--every", type=int, default=5, help="sample every Nth frame (10 fps video)")
    args = ap.parse_args()
    print(describe_cpu())
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    counts = {
        int(k): int(v)
        for k, v in json.loads((REPO_ROOT / "tests" / "data" / "vtest_counts.json").read_text())[
            "counts"
        ].items()
    }
    detector = PersonDetector(threshold=THRESHOLD, threads=1)
    config = MotionConfig()
    cap = cv2.VideoCapture(str(video))
    background: np.ndarray | None = None
    last_t = 0.0
    index = 0
    shares: list[float] = []
    times = {"whole": [], "region": []}  # type: dict[str, list[float]]
    cpus = {"whole": [], "region": []}  # type: dict[str, list[float]]
    errors = {"whole": [], "region": []}  # type: dict[str, list[int]]
    whole_found = region_missed = region_extra = no_motion = 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        t = index / 10.0
        sampled = index % args.every == 0 or index in counts
        small = small_plane(frame, config.width)
        if background is None:
            background = small
        region = motion_region(small, background, frame.shape[:2], args.margin)
        alpha = 1.0 - np.exp(-max(t - last_t, 0.0) / config.background_s)
        cv2.accumulateWeighted(small, background, alpha)
        last_t = t
        if not sampled or index == 0:
            index += 1
            continue
        h, w = frame.shape[:2]
        results = {}
        for how in ("whole", "region"):
            t0, c0 = time.perf_counter(), time.process_time()
            if how == "whole":
                found = detector.detect(frame).boxes.tolist()
            elif region is None:
                found = []  # nothing moved: a region detector would not run at all
            else:
                x1, y1, x2, y2 = region
                crop = np.ascontiguousarray(frame[y1:y2, x1:x2])
                found = [
                    [b[0] + x1, b[1] + y1, b[2] + x1, b[3] + y1]
                    for b in detector.detect(crop).boxes.tolist()
                ]
            times[how].append((time.perf_counter() - t0) * 1e3)
            cpus[how].append((time.process_time() - c0) * 1e3)
            results[how] = found
        if region is None:
            no_motion += 1
        else:
            shares.append((region[2] - region[0]) * (region[3] - region[1]) / (w * h))
        whole_found += len(results["whole"])
        region_missed += sum(
            all(box_iou(a, b) < 0.5 for b in results["region"]) for a in results["whole"]
        )
        region_extra += sum(
            all(box_iou(a, b) < 0.5 for b in results["whole"]) for a in results["region"]
        )
        if index in counts:
            for how in ("whole", "region"):
                errors[how].append(len(results[how]) - counts[index])
        index += 1
    cap.release()

    n = len(times["whole"])
    print(
        f"{video.name}: {n} sampled frames (every {args.every}th and the hand-counted ones), "
        f"motion region grown by {args.margin:.0%} of the frame; threshold {THRESHOLD}"
    )
    print(
        f"motion region: mean {np.mean(shares):.0%} of the frame, median {np.median(shares):.0%},"
        f" 10th percentile {np.percentile(shares, 10):.0%}; frames with no motion: {no_motion}"
    )
    header = f"{'detect on':<14}{'ms p50':>8}{'CPU ms':>8}{'count MAE':>11}{'bias':>7}"
    print(header)
    print("-" * len(header))
    for how in ("whole", "region"):
        e = np.asarray(errors[how], float)
        print(
            f"{how + ' frame' if how == 'whole' else 'motion region':<14}"
            f"{np.median(times[how]):>8.1f}{np.mean(cpus[how]):>8.1f}"
            f"{np.mean(np.abs(e)):>11.3f}{np.mean(e):>+7.2f}"
        )
    print(
        f"people the whole-frame run finds: {whole_found}; the region run misses "
        f"{region_missed} of them and finds {region_extra} it does not"
    )


if __name__ == "__main__":
    main()
