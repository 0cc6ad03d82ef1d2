"""Make the detector's check set (``models/check/``): the images every backend and precision
is held to, and what the reference detector finds on them.

    python scripts/make_check_set.py [--data data] [--check]

The images, chosen by a rule fixed before any variant was run on them (never picked for
where one variant differs): the 16 hand-counted frames of the sample video
(tests/data/vtest_counts.json: frames 0, 50, ..., 750) and the four quarters of frames
125, 375 and 625 (people about twice as large, as a closer camera sees them), all
resized to the detector's 416 px on the long side as the detector itself resizes
(INTER_LINEAR), and ``messi5.jpg`` (a close-up, 416 px wide), stored as JPEG quality 90.
The reference is the shipped fp32 NanoDet-g run by onnxruntime on one thread, what
Lookout has always counted with: every box at score 0.3 or more, to 4 decimals, in
``reference.json``. ``--check`` remakes everything in memory and fails when a file
differs (the images byte for byte, the reference to 1e-4).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from quantize_detector import read_video_frames  # noqa: E402

from models.accuracy import CHECK_DIR, REFERENCE_FILE, REPORT_SCORE  # noqa: E402
from models.detector import DEFAULT_MODEL_PATH, PersonDetector  # noqa: E402

FRAMES = tuple(range(0, 800, 50))
QUARTERED = (125, 375, 625)
SIDE = 416
QUALITY = 90


def shrink(image: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    s = SIDE / max(h, w)
    return cv2.resize(image, (round(w * s), round(h * s)), interpolation=cv2.INTER_LINEAR)


def images(data: Path) -> dict[str, bytes]:
    frames = read_video_frames(data / "vtest.avi", set(FRAMES) | set(QUARTERED))
    out: dict[str, np.ndarray] = {f"vtest_{i:03d}.jpg": shrink(frames[i]) for i in FRAMES}
    for i in QUARTERED:
        h, w = frames[i].shape[:2]
        for q, (r, c) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1)), start=1):
            part = frames[i][r * h // 2 : (r + 1) * h // 2, c * w // 2 : (c + 1) * w // 2]
            out[f"vtest_{i:03d}_q{q}.jpg"] = shrink(part)
    messi = cv2.imread(str(data / "messi5.jpg"))
    if messi is None:
        raise SystemExit(f"cannot read {data / 'messi5.jpg'}")
    out["messi5.jpg"] = shrink(messi)
    encoded = {}
    for name, image in out.items():
        ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, QUALITY])
        assert ok
        encoded[name] = jpeg.tobytes()
    return encoded


def reference(encoded: dict[str, bytes]) -> dict[str, object]:
    detector = PersonDetector(DEFAULT_MODEL_PATH, threshold=REPORT_SCORE, threads=1)
    found = {}
    for name, jpeg in encoded.items():
        image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        dets = detector.detect(image)
        found[name] = [
            [*(round(float(v), 1) for v in box), round(float(score), 4)]
            for box, score in zip(dets.boxes.tolist(), dets.scores.tolist(), strict=True)
        ]
    return {
        "detector": "models/nanodet-g-416.onnx, onnxruntime CPU, one thread",
        "min_score": REPORT_SCORE,
        "boxes": "x1, y1, x2, y2 (pixels of the stored image), score",
        "images": found,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    encoded = images(args.data)
    ref = reference(encoded)
    if args.check:
        bad = [n for n, b in encoded.items() if (CHECK_DIR / n).read_bytes() != b]
        stored = json.loads(REFERENCE_FILE.read_text())["images"]
        for name, boxes in ref["images"].items():  # type: ignore[attr-defined]
            theirs = stored.get(name, [])
            if len(theirs) != len(boxes) or any(
                abs(a - b) > 1e-4
                for x, y in zip(boxes, theirs, strict=True)
                for a, b in zip(x, y, strict=True)
            ):
                bad.append(f"{name} (reference)")
        print("the check set is as made" if not bad else f"differs: {', '.join(bad)}")
        return 1 if bad else 0
    CHECK_DIR.mkdir(exist_ok=True)
    for old in CHECK_DIR.glob("*.jpg"):
        old.unlink()
    for name, jpeg in encoded.items():
        (CHECK_DIR / name).write_bytes(jpeg)
    REFERENCE_FILE.write_text(json.dumps(ref, indent=1) + "\n")
    total = sum(len(b) for b in encoded.values())
    print(f"{len(encoded)} images ({total / 1e3:.0f} kB) and {REFERENCE_FILE.name} in {CHECK_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
