"""Benchmark the person detector against OpenCV's HOG people detector on vtest.avi.

Per frame, p50/p95 in ms: preprocess, inference, decode and their total, and the process CPU
per detection, for the shipped NanoDet-g 416 in fp32 and int8 (models/README.md) at 1 and 2
ONNX Runtime intra-op threads, and OpenCV's HOG + linear SVM people detector
(``cv2.HOGDescriptor_getDefaultPeopleDetector``) at 1 and 2 OpenCV threads. All are scored
on the hand-counted frames in tests/data/vtest_counts.json (mean absolute count error).

Then the accuracy checks of each NanoDet precision against fp32: count MAE, an empty scene
(the per-pixel median of every 16th frame: the walkers never stand still long enough to
survive it) and close-ups: every person fp32 finds, at the threshold, in messi5.jpg, in
crops of video frames around each person fp32 finds there (1.6 person-heights tall) and in
the 3x3 tiles of those frames (frames 40, 140, ..., 740: none is in the int8 calibration
set), and in basketball1.png / basketball2.png when they are in a data directory (same
opencv-doc package as the sample video; never calibrated on). A person counts as found
when the other model has a box at the threshold with IoU >= 0.5.

    python scripts/bench/detector.py [--frames 100] [--precision fp32,int8] [--hog-python PATH]

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
PEOPLE_FILE = REPO_ROOT / "tests" / "data" / "vtest_people.json"
Frames = dict[int, np.ndarray]
MEDIAN_EVERY = 16  # as tests/models/test_detector.py: 50 frames for the empty scene
CLOSEUP_FRAMES = tuple(range(40, 795, 100))  # none of them calibrated the int8 model
EXTRA_CLOSEUPS = ("basketball1.png", "basketball2.png")
THRESHOLD = 0.45  # PersonDetector's and lookout's default
MARGIN = 0.02  # "clearly found" by the reference: at least this far above the threshold
TIMED = ("preprocess", "inference", "decode", "total", "cpu")

sys.path.insert(0, str(REPO_ROOT / "scripts"))

from fetch_sample_data import find_data  # noqa: E402
from machine import describe_cpu  # noqa: E402


def find_video(explicit: Path | None) -> Path:
    found = find_data("vtest.avi", explicit)
    if found is None:
        sys.exit("vtest.avi not found: pass --video or set LOOKOUT_DATA_DIR")
    return found


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


def backend_of(name: str, size: int, threads: int) -> Any:
    """What runs the network: onnxruntime at the file's size, OpenVINO at any square size."""
    import functools

    from models.backend import OnnxRuntimeBackend
    from models.openvino_backend import OpenVinoBackend

    if name == "openvino":
        shape = None if size == FILE_SIZE else (size, size)
        return functools.partial(OpenVinoBackend, threads=threads, size=shape)
    return functools.partial(OnnxRuntimeBackend, threads=threads)


def run_nanodet(
    frames: Frames,
    bench_idx: list[int],
    counts: dict[int, int],
    threads: list[int],
    models: list[tuple[str, Path]],
    backends: list[str],
    sizes: list[int],
) -> list[dict[str, Any]]:
    """Every (model, backend, input size, threads) on each frame in turn, so that what else
    the machine does meanwhile weighs on all of them alike; each also held to the accuracy
    rule (models/accuracy.py) at the file's size."""
    from models.accuracy import judge
    from models.detector import PersonDetector

    rows = []
    for label, path in models:
        for backend in backends:
            for size in sizes:
                if size != FILE_SIZE and backend != "openvino":
                    continue  # onnxruntime runs the file's own input size
                for n in threads:
                    det = PersonDetector(path, threads=n, backend=backend_of(backend, size, n))
                    for i in bench_idx[:5]:
                        det.detect(frames[i])
                    computes = getattr(det.backend, "arithmetic", "fp32")
                    if "int8" in label:  # its convolutions are int8 whatever floats remain
                        computes = "int8"
                    name = f"{label} {backend} ({computes}) {size}"
                    rule = "-"
                    if size == FILE_SIZE and n == threads[0]:
                        det.threshold = 0.3  # the rule scores the reference's low boxes too
                        verdict = judge(det.detect)
                        det.threshold = THRESHOLD
                        rule = "pass" if verdict.passed else "fail"
                    rows.append(
                        {"name": name, "threads": n, "det": det, "rule": rule}
                        | {k: [] for k in TIMED}
                    )
    for i in bench_idx:
        for row in rows:
            det = row["det"]
            t0, c0 = time.perf_counter(), time.process_time()
            det.detect(frames[i])
            row["total"].append((time.perf_counter() - t0) * 1e3)
            row["cpu"].append((time.process_time() - c0) * 1e3)
            t = det.last_timing
            row["preprocess"].append(t.preprocess_ms)
            row["inference"].append(t.inference_ms)
            row["decode"].append(t.decode_ms)
    for row in rows:
        det = row.pop("det")
        row["errors"] = [len(det.detect(frames[i])) - c for i, c in counts.items()]
    return rows


FILE_SIZE = 416  # the shipped files' input


# ------------------------------------------------------------------------- accuracy


def closeup_images(frames: Frames, reference: Any) -> list[tuple[str, str, np.ndarray]]:
    """(group, name, image): messi5.jpg, the basketball photos if present, person crops and
    3x3 tiles of CLOSEUP_FRAMES. The crops are placed around the people the reference finds."""
    images: list[tuple[str, str, np.ndarray]] = []
    for name in ("messi5.jpg", *EXTRA_CLOSEUPS):
        path = find_data(name)
        image = cv2.imread(str(path)) if path is not None else None
        if image is not None:
            group = "messi5.jpg" if name == "messi5.jpg" else "basketball1/2.png"
            images.append((group, name, image))
    for i in CLOSEUP_FRAMES:
        frame = frames[i]
        h, w = frame.shape[:2]
        for k, box in enumerate(reference.detect(frame).boxes.tolist()[:3]):
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            ch = (box[3] - box[1]) * 1.6
            cw = ch * 4 / 3
            x1, y1 = int(max(0, cx - cw / 2)), int(max(0, cy - ch / 2))
            x2, y2 = int(min(w, cx + cw / 2)), int(min(h, cy + ch / 2))
            images.append(("vtest person crops", f"frame {i} person {k + 1}", frame[y1:y2, x1:x2]))
        for r in range(3):
            for c in range(3):
                tile = frame[r * h // 3 : (r + 1) * h // 3, c * w // 3 : (c + 1) * w // 3]
                images.append(("vtest 3x3 tiles", f"frame {i} tile {3 * r + c + 1}", tile))
    return images


def accuracy(
    frames: Frames, counts: dict[int, int], models: list[tuple[str, Path]], reference: Path
) -> None:
    from models.detections import box_iou
    from models.detector import PersonDetector

    ref = PersonDetector(reference, threshold=THRESHOLD)
    spread = [f for i, f in sorted(frames.items()) if i % MEDIAN_EVERY == 0]
    background = np.median(np.stack(spread), axis=0).astype(np.uint8)
    images = closeup_images(frames, ref)
    groups = list(dict.fromkeys(g for g, _, _ in images))
    wanted = [(g, n, img, ref.detect(img)) for g, n, img in images]

    print()
    print(
        f"accuracy at threshold {THRESHOLD} (close-ups: people {reference.name} finds that "
        "the model finds too, IoU >= 0.5)"
    )
    head = (
        f"{'detector':34s}  {'count MAE':>9s}  {'bias':>5s}  {'empty scene':>17s}  "
        + "  ".join(f"{g:>18s}" for g in groups)
        + f"  {'close-ups':>9s}  {'extra':>5s}"
    )
    print(head)
    print("-" * len(head))
    misses: list[str] = []
    margins: list[str] = []
    for label, path in models:
        det = PersonDetector(path, threshold=THRESHOLD)
        low = PersonDetector(path, threshold=0.05)
        errors = np.asarray([len(det.detect(frames[i])) - c for i, c in counts.items()], float)
        empty = len(det.detect(background))
        top = float(low.detect(background).scores.max(initial=0.0))
        found = dict.fromkeys(groups, 0)
        total = dict.fromkeys(groups, 0)
        extra = 0
        clear = clear_found = 0  # people the reference scores well above the threshold
        for group, name, img, target in wanted:
            got = det.detect(img).boxes.tolist()
            scores = low.detect(img)
            extra += sum(all(box_iou(g, t) < 0.5 for t in target.boxes.tolist()) for g in got)
            for box, score in zip(target.boxes.tolist(), target.scores.tolist(), strict=True):
                total[group] += 1
                hit = any(box_iou(box, g) >= 0.5 for g in got)
                if score >= THRESHOLD + MARGIN:
                    clear += 1
                    clear_found += hit
                if hit:
                    found[group] += 1
                    continue
                near = [
                    s
                    for b, s in zip(scores.boxes.tolist(), scores.scores.tolist(), strict=True)
                    if box_iou(box, b) >= 0.5
                ]
                misses.append(
                    f"  {label}: {name}: reference score {score:.3f}, this model's "
                    f"{max(near, default=0.0):.3f}"
                )
        margins.append(
            f"  {label}: {clear_found}/{clear} of the close-up people the reference scores "
            f">= {THRESHOLD + MARGIN:.2f}"
        )
        cells = "  ".join(f"{f'{found[g]}/{total[g]}':>18s}" for g in groups)
        print(
            f"{label:34s}  {np.mean(np.abs(errors)):9.3f}  {np.mean(errors):+5.2f}  "
            f"{f'{empty} people, max {top:.2f}':>17s}  {cells}  "
            f"{f'{sum(found.values())}/{sum(total.values())}':>9s}  {extra:5d}"
        )
    print(
        "empty scene: people found in the median background (max: the highest person score "
        "there); close-ups: people found / people the reference finds; extra: boxes in the "
        "close-ups that match none of the reference's"
    )
    print("found with a margin (a person the reference scores just above the threshold may")
    print("flip with any change of the model; these may not):")
    print("\n".join(margins))
    if misses:
        print("missed close-up people (the model's best score on that person, any box):")
        print("\n".join(misses))


# ----------------------------------------------------------------------------- table


def print_table(rows: list[dict[str, Any]]) -> None:
    def cell(row: dict[str, Any], key: str) -> str:
        if key not in row:
            return f"{'-':>15s}"
        p50, p95 = pct(row[key])
        return f"{p50:6.1f} / {p95:6.1f}"

    def cpu(row: dict[str, Any]) -> str:
        return f"{np.mean(row['cpu']):7.1f}" if "cpu" in row else f"{'-':>7s}"

    head = (
        f"{'detector':44s} {'thr':>3s}  {'preprocess':>15s}  {'inference':>15s}  "
        f"{'decode':>15s}  {'total':>15s}  {'CPU/det':>7s}  {'count MAE':>9s}  {'bias':>5s}"
        f"  {'exact':>5s}  {'rule':>4s}"
    )
    print(head)
    print(
        f"{'':44s} {'':3s}  "
        + "  ".join(f"{'p50 / p95 ms':>15s}" for _ in range(4))
        + f"  {'mean ms':>7s}"
    )
    print("-" * len(head))
    for row in rows:
        errors = np.asarray(row["errors"], dtype=float)
        print(
            f"{row['name']:44s} {row['threads']:3d}  {cell(row, 'preprocess')}  "
            f"{cell(row, 'inference')}  {cell(row, 'decode')}  {cell(row, 'total')}  "
            f"{cpu(row)}  {np.mean(np.abs(errors)):9.3f}  {np.mean(errors):+5.2f}"
            f"  {np.mean(errors == 0):5.2f}  {row.get('rule', '-'):>4s}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--video", type=Path, default=None)
    ap.add_argument("--frames", type=int, default=100, help="frames timed, spread over the video")
    ap.add_argument("--threads", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2])
    ap.add_argument(
        "--precision",
        type=lambda s: s.split(","),
        default=["fp32", "int8"],
        help="the shipped NanoDet files to compare (default fp32,int8)",
    )
    ap.add_argument("--model", type=Path, default=None, help="an ONNX file instead of those")
    ap.add_argument(
        "--backends",
        type=lambda s: s.split(","),
        default=None,
        help="onnxruntime,openvino (default: those installed)",
    )
    ap.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[FILE_SIZE],
        help="square input sizes, multiples of 32 (others than 416: OpenVINO only), "
        "e.g. 416,512,608",
    )
    ap.add_argument(
        "--truth",
        type=Path,
        default=PEOPLE_FILE,
        help="hand counts to score against (default: tests/data/vtest_people.json, 65 frames)",
    )
    ap.add_argument("--skip-accuracy", action="store_true", help="timing and count MAE only")
    ap.add_argument("--hog-python", default=None, help="interpreter with cv2.HOGDescriptor")
    ap.add_argument("--skip-hog", action="store_true")
    ap.add_argument("--hog-worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    print(describe_cpu())
    args.video = find_video(args.video)
    if args.hog_worker is not None:
        hog_worker(args)
        return

    counts = hand_counts()
    truth = {int(k): int(v) for k, v in json.loads(args.truth.read_text())["counts"].items()}
    n_video = int(cv2.VideoCapture(str(args.video)).get(cv2.CAP_PROP_FRAME_COUNT))
    bench_idx = pick(n_video, args.frames)
    wanted = set(bench_idx) | set(counts) | set(truth)
    if not args.skip_accuracy:
        wanted |= set(range(0, n_video, MEDIAN_EVERY)) | set(CLOSEUP_FRAMES)
    frames = read_frames(args.video, wanted)
    h, w = frames[bench_idx[0]].shape[:2]
    sys.path.insert(0, str(REPO_ROOT))
    from models.detector import DEFAULT_MODEL_PATH, sha256_file, shipped_model

    if args.model is not None:
        models = [(f"{args.model.name}", args.model)]
    else:
        models = [(f"NanoDet-g {p}", shipped_model(p)) for p in args.precision]
    for label, path in models:
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        print(f"{label}: {shown} (sha256 {sha256_file(path)[:16]}...)")

    import onnxruntime

    def version(package: str) -> str:
        from importlib import metadata

        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    print(
        f"{args.video.name}: {len(bench_idx)} timed frames of {w}x{h}, count error on "
        f"{len(truth)} hand-counted frames ({args.truth.name})"
    )
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}, numpy {np.__version__}, OpenCV {cv2.__version__},"
        f" onnxruntime {onnxruntime.__version__}, openvino {version('openvino')}"
    )
    from models.openvino_backend import openvino_available

    backends = args.backends
    if backends is None:
        missing = openvino_available()
        backends = ["onnxruntime"] + ([] if missing else ["openvino"])
        if missing:
            print(f"openvino rows left out: {missing}")
    rows = run_nanodet(frames, bench_idx, truth, args.threads, models, backends, args.sizes)

    note = ""
    if args.skip_hog:
        note = "HOG skipped (--skip-hog)"
    elif hog_available():
        rows += run_hog(frames, bench_idx, truth, args.threads)
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
    print(
        "CPU/det: process CPU per detection (all threads); count MAE: mean |detected - hand "
        "count|; bias: mean (detected - hand count); exact: share of frames right; rule: the "
        "accuracy rule on the check set (models/accuracy.py), at one thread and the file's size"
    )
    if note:
        print(note)
    if not args.skip_accuracy:
        accuracy(frames, counts, models, DEFAULT_MODEL_PATH)


if __name__ == "__main__":
    main()
