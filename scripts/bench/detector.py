"""Benchmark the person detector against OpenCV's HOG people detector on vtest.avi.

Per frame, p50/p95 in ms: preprocess, inference, decode and their total, for NanoDet at 1
and 2 ONNX Runtime intra-op threads, and OpenCV's HOG + linear SVM people detector
(``cv2.HOGDescriptor_getDefaultPeopleDetector``) at 1 and 2 OpenCV threads. Both are scored
on the hand-counted frames in tests/data/vtest_counts.json (mean absolute count error).

    python scripts/bench/detector.py [--frames 100] [--hog-python PATH]

OpenCV 5's main headless wheel no longer has HOG (it moved to the contrib build). When the
running interpreter lacks ``cv2.HOGDescriptor`` the HOG rows come from ``--hog-python``, an
interpreter that has it, run as a subprocess on the same frames, e.g.:

    python -m venv /tmp/hog-venv
    /tmp/hog-venv/bin/pip install opencv-contrib-python-headless numpy
    python scripts/bench/detector.py --hog-python /tmp/hog-venv/bin/python

The sample video is looked up like the tests do: --video, $LOOKOUT_DATA_DIR, <repo>/data,
<repo>/../shared/data.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
COUNTS_FILE = REPO_ROOT / "tests" / "data" / "vtest_counts.json"
Frames = dict[int, np.ndarray]


def find_video(explicit: Path | None) -> Path:
    candidates = [explicit] if explicit else []
    env = os.environ.get("LOOKOUT_DATA_DIR")
    if env:
        candidates.append(Path(env) / "vtest.avi")
    candidates += [
        REPO_ROOT / "data" / "vtest.avi",
        REPO_ROOT.parent / "shared" / "data" / "vtest.avi",
    ]
    for c in candidates:
        if c is not None and c.is_file():
            return c
    sys.exit("vtest.avi not found: pass --video or set LOOKOUT_DATA_DIR")


def hand_counts() -> dict[int, int]:
    data = json.loads(COUNTS_FILE.read_text())
    return {int(k): int(v) for k, v in data["counts"].items()}


def read_frames(video: Path, wanted: set[int]) -> Frames:
    # Sequential decode: seeking is not frame-exact in every build.
    cap = cv2.VideoCapture(str(video))
    frames: Frames = {}
    index = 0
    while len(frames) < len(wanted):
        ok, frame = cap.read()
        if not ok:
            break
        if index in wanted:
            frames[index] = frame
        index += 1
    cap.release()
    return frames


def pick(n_total: int, n: int) -> list[int]:
    return sorted({round(float(x)) for x in np.linspace(0, n_total - 1, n)})


def pct(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


# ------------------------------------------------------------------------------- HOG


def hog_available() -> bool:
    return hasattr(cv2, "HOGDescriptor")


def run_hog(
    frames: Frames, bench_idx: list[int], counts: dict[int, int], threads: list[int]
) -> list[dict[str, Any]]:
    contrib: Any = cv2  # HOG is not in the main OpenCV 5 wheel (nor its type stubs)
    hog = contrib.HOGDescriptor()
    hog.setSVMDetector(contrib.HOGDescriptor_getDefaultPeopleDetector())

    def detect(img: np.ndarray) -> int:
        # The parameters of OpenCV's peopledetect sample.
        rects, _ = hog.detectMultiScale(
            img, hitThreshold=0, winStride=(8, 8), padding=(32, 32), scale=1.05, groupThreshold=2
        )
        return len(rects)

    rows = []
    for n in threads:
        cv2.setNumThreads(n)
        for i in bench_idx[:3]:
            detect(frames[i])
        totals = []
        for i in bench_idx:
            t0 = time.perf_counter()
            detect(frames[i])
            totals.append((time.perf_counter() - t0) * 1e3)
        errors = [detect(frames[i]) - c for i, c in counts.items()]
        rows.append(
            {
                "name": f"HOG people (OpenCV {cv2.__version__})",
                "threads": n,
                "total": totals,
                "errors": errors,
            }
        )
    return rows


def hog_worker(args: argparse.Namespace) -> None:
    """Entry point when run by --hog-python: JSON rows to stdout."""
    counts = hand_counts()
    bench_idx = json.loads(args.hog_worker)
    frames = read_frames(args.video, set(bench_idx) | set(counts))
    rows = run_hog(frames, bench_idx, counts, args.threads)
    json.dump(rows, sys.stdout)


# --------------------------------------------------------------------------- NanoDet


def run_nanodet(
    frames: Frames,
    bench_idx: list[int],
    counts: dict[int, int],
    threads: list[int],
    model: Path | None,
) -> list[dict[str, Any]]:
    sys.path.insert(0, str(REPO_ROOT))
    from models.detector import PersonDetector

    rows = []
    for n in threads:
        det = PersonDetector(model, threads=n)
        for i in bench_idx[:5]:
            det.detect(frames[i])
        pre, inf, dec, tot = [], [], [], []
        for i in bench_idx:
            t0 = time.perf_counter()
            det.detect(frames[i])
            tot.append((time.perf_counter() - t0) * 1e3)
            t = det.last_timing
            pre.append(t.preprocess_ms)
            inf.append(t.inference_ms)
            dec.append(t.decode_ms)
        errors = [len(det.detect(frames[i])) - c for i, c in counts.items()]
        rows.append(
            {
                "name": f"NanoDet-g 416 ({det.path.name})",
                "threads": n,
                "preprocess": pre,
                "inference": inf,
                "decode": dec,
                "total": tot,
                "errors": errors,
            }
        )
    return rows


# ----------------------------------------------------------------------------- table


def print_table(rows: list[dict[str, Any]]) -> None:
    def cell(row: dict[str, Any], key: str) -> str:
        if key not in row:
            return f"{'-':>15s}"
        p50, p95 = pct(row[key])
        return f"{p50:6.1f} / {p95:6.1f}"

    head = (
        f"{'detector':34s} {'thr':>3s}  {'preprocess':>15s}  {'inference':>15s}  "
        f"{'decode':>15s}  {'total':>15s}  {'count MAE':>9s}  {'bias':>5s}"
    )
    print(head)
    print(f"{'':34s} {'':3s}  " + "  ".join(f"{'p50 / p95 ms':>15s}" for _ in range(4)))
    print("-" * len(head))
    for row in rows:
        errors = np.asarray(row["errors"], dtype=float)
        print(
            f"{row['name']:34s} {row['threads']:3d}  {cell(row, 'preprocess')}  "
            f"{cell(row, 'inference')}  {cell(row, 'decode')}  {cell(row, 'total')}  "
            f"{np.mean(np.abs(errors)):9.3f}  {np.mean(errors):+5.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", type=Path, default=None)
    ap.add_argument("--frames", type=int, default=100, help="frames timed, spread over the video")
    ap.add_argument("--threads", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    ap.add_argument("--model", type=Path, default=None, help="ONNX file (default: NanoDet)")
    ap.add_argument("--hog-python", default=None, help="interpreter with cv2.HOGDescriptor")
    ap.add_argument("--skip-hog", action="store_true")
    ap.add_argument("--hog-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.video = find_video(args.video)
    if args.hog_worker is not None:
        hog_worker(args)
        return

    counts = hand_counts()
    n_video = int(cv2.VideoCapture(str(args.video)).get(cv2.CAP_PROP_FRAME_COUNT))
    bench_idx = pick(n_video, args.frames)
    frames = read_frames(args.video, set(bench_idx) | set(counts))
    h, w = frames[bench_idx[0]].shape[:2]

    import onnxruntime

    print(
        f"{args.video.name}: {len(bench_idx)} timed frames of {w}x{h}, count error on "
        f"{len(counts)} hand-counted frames (tests/data/vtest_counts.json)"
    )
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}, numpy {np.__version__}, OpenCV {cv2.__version__},"
        f" onnxruntime {onnxruntime.__version__}"
    )
    rows = run_nanodet(frames, bench_idx, counts, args.threads, args.model)

    note = ""
    if args.skip_hog:
        note = "HOG skipped (--skip-hog)"
    elif hog_available():
        rows += run_hog(frames, bench_idx, counts, args.threads)
    elif args.hog_python:
        proc = subprocess.run(
            [
                args.hog_python,
                __file__,
                "--video",
                str(args.video),
                "--threads",
                ",".join(map(str, args.threads)),
                "--hog-worker",
                json.dumps(bench_idx),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"HOG run in {args.hog_python} failed:\n{proc.stderr.strip()}")
        rows += json.loads(proc.stdout)
        note = f"HOG rows measured by {args.hog_python}"
    else:
        note = (
            f"HOG skipped: this OpenCV ({cv2.__version__}) has no cv2.HOGDescriptor (OpenCV 5 "
            "moved it out of the main headless wheel). To include it:\n"
            "  python -m venv /tmp/hog-venv && /tmp/hog-venv/bin/pip install "
            "opencv-contrib-python-headless numpy\n"
            "  python scripts/bench/detector.py --hog-python /tmp/hog-venv/bin/python"
        )
    print()
    print_table(rows)
    print("count MAE: mean |detected - hand count|; bias: mean (detected - hand count)")
    if note:
        print(note)


if __name__ == "__main__":
    main()
