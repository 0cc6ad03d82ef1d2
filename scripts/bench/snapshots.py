"""What one snapshot costs the writer thread, by ``--snapshots-privacy``, and what it weighs.

    python scripts/bench/snapshots.py [--frames 12] [--rounds 5]

The frames are real: the sample video through the real detector, tracker and a line (the
lamp post), at the busiest moments (most people). Each row draws and encodes the same
frames the way the snapshot worker does (``private_frame`` then ``render_jpeg`` at the
configured JPEG quality); the rows take turns round by round, so a noisy neighbour slows
them alike. Times are the worker's own CPU work per picture (``time.perf_counter`` around
it, one thread); sizes are the JPEG files' bytes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.app.count import perceive_video
from device.app.parts import sample_video
from device.outputs.page.render import DisplayFrame, SceneGeometry, render_jpeg
from device.outputs.pictures.privacy import private_frame
from device.vision.percept import Percept
from device.vision.perception import Perception
from device.vision.scene import SceneSpec
from models.detector import PersonDetector

LINE = ((0.5599, 0.7292), (0.5599, 0.2083))
QUALITY = 80


def busiest(count: int) -> list[Percept]:
    """The ``count`` percepts of the sample video with the most people in them."""
    seen: list[Percept] = []
    perception = Perception(
        PersonDetector(threshold=0.2),
        detect_fps=5.0,
        threshold=0.45,
        scene=SceneSpec(lines={"post": LINE}),
        on_percept=seen.append,
    )
    video = sample_video()
    assert video is not None, "the sample video is missing: run scripts/bootstrap.py first"
    perceive_video(perception, video, every=2)
    return sorted(seen, key=lambda p: len(p.people), reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(describe_cpu())
    percepts = busiest(args.frames)
    geometry = SceneGeometry(lines={"post": LINE})
    shown = [DisplayFrame.of(p, i, geometry) for i, p in enumerate(percepts)]
    people = statistics.mean(len(p.people) for p in percepts)
    times: dict[str, list[float]] = {"none": [], "faces": [], "boxes": []}
    sizes: dict[str, list[int]] = {name: [] for name in times}
    for _ in range(args.rounds):
        for privacy in times:
            for frame in shown:
                start = time.perf_counter()
                data = render_jpeg(private_frame(frame, privacy), QUALITY)  # type: ignore[arg-type]
                times[privacy].append((time.perf_counter() - start) * 1000)
                sizes[privacy].append(len(data))
    width, height = shown[0].image.shape[1], shown[0].image.shape[0]
    print(
        f"{len(shown)} frames of {width}x{height} with {people:.1f} people on average, "
        f"{args.rounds} rounds, JPEG quality {QUALITY}"
    )
    print(f"{'privacy':<8} {'ms p50':>8} {'ms p95':>8} {'vs none':>8} {'KiB':>7}")
    base = statistics.median(times["none"])
    for privacy, values in times.items():
        values.sort()
        p50 = statistics.median(values)
        p95 = values[int(0.95 * (len(values) - 1))]
        kib = statistics.mean(sizes[privacy]) / 1024
        print(f"{privacy:<8} {p50:8.1f} {p95:8.1f} {p50 / base:7.2f}x {kib:7.1f}")


if __name__ == "__main__":
    main()
