"""Benchmark the tracker (and a line and a zone) per frame, for 5, 20 and 50 people.

    python scripts/bench/tracker.py [--frames 500] [--people 5,20,50] [--video]

Synthetic scenes: N people wander over a 768x576 frame at 0.5-1.5 body heights
per second (turning gradually before the edges, so nobody leaves), detected
at 5 frames per second with box jitter (3 % of the height), 10 % misses and a
few doubtful boxes; the tracker then a line and a zone run on each frame,
timed on their own (one thread, the detector is not involved). ``--video``
adds the sample video's own detections (the detector runs once over the
frames first, untimed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.vision.presence import PresenceRule
from device.vision.scene import Scene, SceneSpec
from device.vision.tracker import Tracker
from models.detections import Detections

WIDTH, HEIGHT = 768, 576
FPS = 5.0
SPEC = SceneSpec(
    lines={"post": ((0.5599, 0.7292), (0.5599, 0.2083))},
    zones={"left": (((0.05, 0.3), (0.45, 0.3), (0.45, 0.95), (0.05, 0.95)), 10.0)},
)


def synthetic(people: int, frames: int, seed: int = 1) -> list[Detections]:
    rng = np.random.default_rng(seed)
    height = rng.uniform(60, 140, people)
    pos = np.stack([rng.uniform(60, WIDTH - 60, people), rng.uniform(200, HEIGHT - 20, people)], 1)
    heading = rng.uniform(0, 2 * np.pi, people)
    speed = rng.uniform(0.5, 1.5, people) * height
    centre = np.array([WIDTH / 2, (200 + HEIGHT) / 2])
    out = []
    for _ in range(frames):
        # People wander, and turn back (gradually, as people do) before they leave the frame.
        heading += rng.normal(0, 0.1, people)
        near_edge = (
            (pos[:, 0] < 60)
            | (pos[:, 0] > WIDTH - 60)
            | (pos[:, 1] < 200)
            | (pos[:, 1] > HEIGHT - 20)
        )
        to_centre = np.arctan2(centre[1] - pos[:, 1], centre[0] - pos[:, 0])
        turn = np.angle(np.exp(1j * (to_centre - heading)))
        heading[near_edge] += np.clip(turn[near_edge], -0.35, 0.35)
        pos += np.stack([np.cos(heading), 0.5 * np.sin(heading)], 1) * speed[:, None] / FPS
        seen = rng.random(people) > 0.1
        h = height[seen] * (1 + rng.normal(0, 0.03, seen.sum()))
        w = 0.4 * h
        x, y = pos[seen, 0] + rng.normal(0, 0.03, seen.sum()) * h, pos[seen, 1]
        boxes = np.stack([x - w / 2, y - h, x + w / 2, y], axis=1)
        scores = rng.uniform(0.5, 0.95, seen.sum())
        doubtful = rng.random(seen.sum()) < 0.05
        scores[doubtful] = rng.uniform(0.2, 0.45, doubtful.sum())
        out.append(Detections(boxes.astype(np.float32), scores.astype(np.float32)))
    return out


def video_detections(step: int = 2) -> list[Detections]:
    import cv2

    from device.app.parts import sample_video
    from models.detector import PersonDetector

    path = sample_video()
    if path is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    detector = PersonDetector(threshold=0.2)
    cap = cv2.VideoCapture(str(path))
    out = []
    index = 0
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        if index % step == 0:
            out.append(detector.detect(frame))
        index += 1
    return out


def measure(frames: list[Detections]) -> dict[str, float]:
    tracker = Tracker()
    presence = PresenceRule()
    scene = Scene(SPEC)
    track_ms: list[float] = []
    scene_ms: list[float] = []
    confirmed: list[int] = []
    for i, dets in enumerate(frames):
        t = i / FPS
        start = time.perf_counter()
        tracks = tracker.update(dets, t)
        people = presence.people(tracks, t, (HEIGHT, WIDTH, 3))
        mid = time.perf_counter()
        scene.update(people, tracks, (HEIGHT, WIDTH, 3), t)
        end = time.perf_counter()
        track_ms.append((mid - start) * 1000)
        scene_ms.append((end - mid) * 1000)
        confirmed.append(len(people))
    warm = slice(min(10, len(frames) // 5), None)  # ids settle in the first frames
    return {
        "boxes": statistics.fmean(len(d) for d in frames),
        "confirmed": statistics.fmean(confirmed[warm]),
        "track_p50": statistics.median(track_ms[warm]),
        "track_p95": float(np.percentile(track_ms[warm], 95)),
        "scene_p50": statistics.median(scene_ms[warm]),
        "ids": tracker.stats.confirmed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--people", default="5,20,50")
    parser.add_argument("--video", action="store_true")
    args = parser.parse_args()
    print(describe_cpu())
    rows = []
    for n in [int(x) for x in args.people.split(",")]:
        rows.append((f"synthetic {n}", n, measure(synthetic(n, args.frames))))
    if args.video:
        rows.append(("vtest.avi 5 fps", 0, measure(video_detections())))
    header = (
        f"{'scene':<18}{'boxes/frame':>12}{'confirmed':>10}{'ids':>6}"
        f"{'track p50 ms':>13}{'track p95 ms':>13}{'line+zone p50 ms':>17}"
    )
    print(f"tracker, one thread, {args.frames} frames at {FPS:g} fps per synthetic row")
    print(header)
    print("-" * len(header))
    for name, _people, r in rows:
        print(
            f"{name:<18}{r['boxes']:>12.1f}{r['confirmed']:>10.1f}{r['ids']:>6}"
            f"{r['track_p50']:>13.3f}{r['track_p95']:>13.3f}{r['scene_p50']:>17.3f}"
        )
    print(
        "ids: tracks ever confirmed (a synthetic scene holds N people for its whole length; "
        "more ids than people are identity breaks)."
    )


if __name__ == "__main__":
    main()
