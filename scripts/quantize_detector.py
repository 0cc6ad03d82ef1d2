#!/usr/bin/env python3
"""Make models/nanodet-g-416-int8.onnx: static int8 (QDQ) quantisation of the fp32 detector.

What this does, in order:

1. Check the fp32 input against the sha256 that models/README.md gives for
   ``nanodet-g-416.onnx`` (another file is refused unless ``--any-fp32``).
2. Create a throwaway virtual environment in a temp dir with the pinned export-time tools
   (onnx, onnxruntime, numpy, opencv-python-headless; ``onnx`` is not a runtime dependency of
   Lookout), or reuse one given with ``--venv``.
3. Inside it (this same file, run with ``_worker``):
   a. Build the calibration set, in a fixed order (``calibration_set``): whole frames of the
      sample video, zoomed tiles of other frames (people two to three times larger than in
      the video) and close-ups made from messi5.jpg (whole, mirrored, shrunk, cropped).
      Every sample is letterboxed and normalised by ``models/detector.py`` itself, exactly
      as the detector feeds the network.
   b. Fold each zero ``Pad`` in front of a ``Conv`` into that Conv's own ``pads`` (the
      export writes TensorFlow's explicit padding as 28 separate Pad nodes; the same
      arithmetic, exactly). Left as they are, each one sits in float between a
      DequantizeLinear and a QuantizeLinear in the int8 graph: 29 Pad, 34 Q and 36 DQ kernels
      a run, a fifth of the int8 model's time.
   c. ``onnxruntime.quantization.quantize_static``: QDQ format, MinMax calibration, uint8
      activations, int8 per-channel 8-bit weights. Left in float (``nodes_to_exclude``): the
      first Conv (three input channels: as QLinearConv it was 1.7x slower than in float and
      the input's rounding its largest single error), the stem's ``Pad`` and ``MaxPool``
      (that Pad pads with -inf, MaxPool's padding; a quantised -inf gives an infinite scale
      and a model that finds nothing) and each head's output tail after its last Conv
      (``Split``, ``Sigmoid``, ``Reshape``, ``Transpose``): the scores then come from the
      dequantised logits through a float sigmoid, not from a second uint8 rounding, which
      took ~0.015 off every score.
   d. Check the result: it loads in PersonDetector as a NanoDet model, finds the player in
      messi5.jpg and counts the hand-counted frames of the video close to fp32.
4. Write ``--out`` and print its sha256; with ``--check`` fail unless it equals the sha256
   that models/README.md gives for ``nanodet-g-416-int8.onnx``.

Run:    python scripts/quantize_detector.py [--out models/nanodet-g-416-int8.onnx] [--check]
Needs:  the sample data (python scripts/fetch_sample_data.py) and PyPI, or ``--venv .venv``
        (the dev install has the same pinned versions) to run offline.

Same inputs, same tool versions and the same kind of CPU give the same bytes; calibration
runs the float model, so a CPU with other float kernels (AVX-512, ARM) can round a range
differently and give a different, equally valid file: --check says so.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

# The sibling scripts, standard library only like this driver.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_detector import make_venv as export_venv
from export_detector import sha256_file
from fetch_sample_data import find_data as find_sample

QUANT_REQUIREMENTS = (
    "onnx==1.23.2",
    "onnxruntime==1.32.0",
    "numpy==2.4.6",
    "opencv-python-headless==5.0.0.93",
)
REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS = REPO_ROOT / "models"
DEFAULT_FP32 = MODELS / "nanodet-g-416.onnx"
DEFAULT_OUT = MODELS / "nanodet-g-416-int8.onnx"
# The stem: Pad(-inf) -> MaxPool, by name in the canonical export (checked in the worker).
STEM_FLOAT_NODES = ("n003_Pad", "n004_MaxPool")
TAIL_OPS = ("Split", "Sigmoid", "Reshape", "Transpose")  # after each head's last Conv
CALIB_MAX_INTERMEDIATE = 16  # calibration keeps at most this many samples' tensors in memory
# What the int8 file must still do (checked before it is written).
MAX_MAE_DELTA = 0.25  # vs fp32 on the hand-counted frames (the bench gives the real figure)
MESSI_BOX = (68.0, 60.0, 458.0, 336.0)  # as in tests/models/test_detector.py


def log(msg: str) -> None:
    print(f"[quantize] {msg}", flush=True)


def readme_sha(name: str) -> str | None:
    """The ``File sha256`` row of models/README.md's section for ``name``."""
    text = (MODELS / "README.md").read_text(encoding="utf-8")
    section = re.search(rf"^## {re.escape(name)}\b.*?(?=^## |\Z)", text, re.M | re.S)
    if section is None:
        return None
    row = re.search(r"File sha256\s*\|\s*`([0-9a-f]{64})`", section.group(0))
    return row.group(1) if row else None


def find_data(name: str, explicit: Path | None) -> Path:
    found = find_sample(name, explicit)
    if found is None:
        sys.exit(f"{name} not found: run python3 scripts/fetch_sample_data.py or pass its path")
    return found


# --------------------------------------------------------------------------------------------
# Outer driver: standard library only, so any Python 3.11+ can run it.
# --------------------------------------------------------------------------------------------


def make_venv(tmp: Path, existing: Path | None) -> Path:
    # The same throwaway-venv step as the fp32 export, with the quantisation tools.
    return export_venv(tmp, existing, QUANT_REQUIREMENTS, "about a minute, ~200 MB")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        worker(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--fp32", type=Path, default=DEFAULT_FP32, help="the float model")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the int8 model")
    ap.add_argument("--video", type=Path, default=None, help="vtest.avi (default: data dirs)")
    ap.add_argument("--image", type=Path, default=None, help="messi5.jpg (default: data dirs)")
    ap.add_argument(
        "--venv",
        type=Path,
        default=None,
        help="reuse this virtual environment (must hold the pinned tools, e.g. .venv)",
    )
    ap.add_argument(
        "--any-fp32", action="store_true", help="quantise an fp32 file models/README.md lacks"
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="fail unless the result has the sha256 models/README.md gives for the int8 file",
    )
    args = ap.parse_args()

    fp32: Path = args.fp32.resolve()
    if not fp32.is_file():
        sys.exit(f"fp32 model not found: {fp32}")
    fp32_sha = sha256_file(fp32)
    expected_fp32 = readme_sha(DEFAULT_FP32.name)
    log(f"fp32 model {fp32.name} sha256={fp32_sha}")
    if fp32_sha != expected_fp32 and not args.any_fp32:
        sys.exit(f"{fp32} is not the {DEFAULT_FP32.name} of models/README.md (--any-fp32)")
    video = find_data("vtest.avi", args.video).resolve()
    image = find_data("messi5.jpg", args.image).resolve()
    for path in (video, image):
        log(f"calibration source {path} sha256={sha256_file(path)}")

    tmp = Path(tempfile.mkdtemp(prefix="lookout-quantize-"))
    try:
        py = make_venv(tmp, args.venv.resolve() if args.venv else None)
        staged = tmp / DEFAULT_OUT.name
        subprocess.run(
            [str(py), str(Path(__file__).resolve()), "_worker"]
            + [str(p) for p in (fp32, staged, video, image)],
            check=True,
        )
        out: Path = args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(staged, out)
        digest = sha256_file(out)
        log(f"wrote {out} ({out.stat().st_size} bytes)")
        print(f"sha256 {digest}  {out.name}")
        if args.check:
            expected = readme_sha(DEFAULT_OUT.name)
            if digest != expected:
                sys.exit(f"sha256 differs from models/README.md ({expected}); see its notes")
            log("sha256 matches models/README.md")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Worker: runs inside the quantisation venv (onnx, onnxruntime, numpy, cv2 importable).
# --------------------------------------------------------------------------------------------


def read_video_frames(video: Path, wanted: set[int]) -> dict[int, Any]:
    import cv2

    # Sequential decode: seeking is not frame-exact in every build.
    cap = cv2.VideoCapture(str(video))
    frames: dict[int, Any] = {}
    index = 0
    try:
        while len(frames) < len(wanted):
            ok, frame = cap.read()
            if not ok:
                break
            if index in wanted:
                frames[index] = frame
            index += 1
    finally:
        cap.release()
    missing = wanted - set(frames)
    if missing:
        raise SystemExit(f"{video}: frames {sorted(missing)[:5]}... not found")
    return frames


# The calibration set, in this order. Frames are 0-based, decoded sequentially. The hand-
# counted frames of tests/data/vtest_counts.json (multiples of 50) are none of them.
WHOLE_FRAMES = tuple(range(5, 795, 25))  # 32 frames spread over the video
TILED_FRAMES = tuple(range(20, 795, 100))  # 8 frames, each cut into 2x2 and 3x3 tiles
TILE_GRIDS = (2, 3)


def tiles(image: Any, n: int) -> list[Any]:
    """The n x n tiles of an image, row by row (each later letterboxed up to 416)."""
    h, w = image.shape[:2]
    ys = [round(h * k / n) for k in range(n + 1)]
    xs = [round(w * k / n) for k in range(n + 1)]
    return [image[ys[r] : ys[r + 1], xs[c] : xs[c + 1]] for r in range(n) for c in range(n)]


def closeups(image: Any) -> list[tuple[str, Any]]:
    """messi5.jpg as close-ups: whole, mirrored, shrunk onto a larger canvas, cropped."""
    import cv2
    import numpy as np

    h, w = image.shape[:2]
    x1, y1, x2, y2 = (int(v) for v in MESSI_BOX)
    small = cv2.resize(image, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
    canvas = np.zeros_like(image)
    canvas[h // 4 : h // 4 + small.shape[0], w // 4 : w // 4 + small.shape[1]] = small
    return [
        ("whole", image),
        ("mirrored", image[:, ::-1]),
        ("shrunk to 1/2 on black", canvas),
        ("player", image[max(0, y1 - 20) : y2, max(0, x1 - 20) : min(w, x2 + 20)]),
        ("left half", image[:, : w // 2]),
        ("right half", image[:, w // 2 :]),
        ("top 2/3", image[: 2 * h // 3]),
    ]


def calibration_set(video: Path, image_path: Path) -> list[tuple[str, Any]]:
    import cv2

    frames = read_video_frames(video, set(WHOLE_FRAMES) | set(TILED_FRAMES))
    samples: list[tuple[str, Any]] = [(f"vtest frame {i}", frames[i]) for i in WHOLE_FRAMES]
    for i in TILED_FRAMES:
        for n in TILE_GRIDS:
            for k, tile in enumerate(tiles(frames[i], n)):
                samples.append((f"vtest frame {i} tile {k + 1}/{n * n}", tile))
    image = cv2.imread(str(image_path))
    if image is None:
        raise SystemExit(f"cannot read {image_path}")
    samples += [(f"{image_path.name} {what}", img) for what, img in closeups(image)]
    return samples


def describe_calibration() -> str:
    n_tiles = len(TILED_FRAMES) * sum(n * n for n in TILE_GRIDS)
    return (
        f"{len(WHOLE_FRAMES)} whole vtest frames ({WHOLE_FRAMES[0]}, {WHOLE_FRAMES[1]}, ..., "
        f"{WHOLE_FRAMES[-1]}), {n_tiles} tiles (2x2 and 3x3) of frames {TILED_FRAMES[0]}, "
        f"{TILED_FRAMES[1]}, ..., {TILED_FRAMES[-1]}, 7 close-ups from messi5.jpg"
    )


def output_tails(model: Any) -> list[str]:
    """The nodes between each graph output and the last Conv before it (Split, Sigmoid,
    Reshape, Transpose: 18 in NanoDet-g, 6 per level)."""
    producer = {out: node for node in model.graph.node for out in node.output}
    found: list[str] = []
    stack = [producer[o.name] for o in model.graph.output]
    while stack:
        node = stack.pop()
        if node.op_type == "Conv" or node.name in found:
            continue
        if node.op_type not in TAIL_OPS:
            raise SystemExit(f"unexpected {node.op_type} node {node.name} in a head's tail")
        found.append(node.name)
        # Only the data input: Reshape's shape comes from integer constants.
        dep = producer.get(node.input[0])
        if dep is not None:
            stack.append(dep)
    if len(found) != 18:
        raise SystemExit(f"expected 18 head-tail nodes, found {len(found)}")
    return sorted(found)


def fold_zero_pads(model: Any) -> int:
    """Fold every constant-zero, spatial-only ``Pad`` whose one consumer is a ``Conv`` into
    that Conv's ``pads`` attribute; returns how many were folded."""
    from onnx import helper, numpy_helper

    graph = model.graph
    init = {i.name: i for i in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    folded = []
    for node in graph.node:
        if node.op_type != "Pad" or node.input[1] not in init:
            continue
        mode = next((a.s for a in node.attribute if a.name == "mode"), b"constant")
        if mode != b"constant" or (len(node.input) > 2 and node.input[2]):
            continue  # edge/reflect padding, or a value that is not zero (the stem's -inf)
        users = consumers.get(node.output[0], [])
        if len(users) != 1 or users[0].op_type != "Conv":
            continue
        pads = numpy_helper.to_array(init[node.input[1]]).tolist()
        conv = users[0]
        if len(pads) != 8 or pads[:2] != [0, 0] or pads[4:6] != [0, 0]:
            continue
        if any(a.name in ("pads", "auto_pad") for a in conv.attribute):
            continue
        conv.attribute.append(helper.make_attribute("pads", [pads[2], pads[3], pads[6], pads[7]]))
        conv.input[0] = node.input[0]
        folded.append(node)
    for node in folded:
        graph.node.remove(node)
    return len(folded)


def quantize(fp32: Path, out: Path, blobs: list[Any]) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    model = onnx.load(str(fp32))
    by_name = {n.name: n for n in model.graph.node}
    for name in STEM_FLOAT_NODES:
        if name not in by_name:
            raise SystemExit(f"{fp32.name}: no node {name}; is this the canonical export?")
    pad, pool = by_name[STEM_FLOAT_NODES[0]], by_name[STEM_FLOAT_NODES[1]]
    if pad.op_type != "Pad" or pool.op_type != "MaxPool" or pool.input[0] != pad.output[0]:
        raise SystemExit(f"{fp32.name}: {STEM_FLOAT_NODES} are not the stem's Pad -> MaxPool")
    tail = output_tails(model)
    first_conv = next(n.name for n in model.graph.node if n.op_type == "Conv")
    folded = fold_zero_pads(model)
    log(f"folded {folded} zero Pads into the Conv after each")
    keep = [first_conv, *STEM_FLOAT_NODES, *tail]
    log(f"kept in float: {', '.join(keep[:3])} and {len(tail)} head-tail nodes")
    source = out.with_name(out.stem + "-fp32-folded.onnx")
    onnx.save(model, str(source))

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._it = iter(blobs)

        def get_next(self) -> dict[str, Any] | None:
            blob = next(self._it, None)
            return None if blob is None else {model.graph.input[0].name: blob}

    # onnxruntime 1.32 raises "No data is collected" when the number of samples is a multiple
    # of the chunk; MinMax ranges do not depend on the chunking.
    chunk = CALIB_MAX_INTERMEDIATE - (len(blobs) % CALIB_MAX_INTERMEDIATE == 0)
    with warnings.catch_warnings():
        # The excluded Pad's output ranges down to -inf; quantize_static still computes a
        # (NaN) zero point for it, then never uses it: checked below.
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        quantize_static(
            str(source),
            str(out),
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # 8-bit weights: on the checks of scripts/bench/detector.py 7-bit ones
            # (reduce_range) gave a larger score error (0.024 against 0.019 mean absolute)
            # and found fewer close-up people; no saturation showed on this AVX2 CPU.
            reduce_range=False,
            nodes_to_exclude=keep,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"CalibMaxIntermediateOutputs": chunk},
        )
    source.unlink()
    q = onnx.load(str(out))
    for init in q.graph.initializer:
        if init.name.endswith("_scale"):
            scale = numpy_helper.to_array(init)
            if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
                raise SystemExit(f"quantisation gave {init.name} = {scale}")
    # Name the source in the file itself.
    q.graph.doc_string = (
        f"static int8 QDQ of {fp32.name} (sha256 {sha256_file(fp32)}) by "
        "scripts/quantize_detector.py"
    )
    onnx.checker.check_model(q)
    onnx.save(q, str(out))


def check(fp32: Path, int8: Path, video: Path, image_path: Path) -> None:
    import json

    import cv2
    import numpy as np

    from models.detections import box_iou
    from models.detector import PersonDetector

    counts = {
        int(k): int(v)
        for k, v in json.loads((REPO_ROOT / "tests" / "data" / "vtest_counts.json").read_text())[
            "counts"
        ].items()
    }
    frames = read_video_frames(video, set(counts))
    dets = {p: PersonDetector(p) for p in (fp32, int8)}
    if dets[int8].kind != "nanodet" or dets[int8].input_size != (416, 416):
        raise SystemExit("int8 model is not recognised as NanoDet 416")
    mae = {
        p: float(np.mean([abs(len(d.detect(frames[i])) - n) for i, n in counts.items()]))
        for p, d in dets.items()
    }
    log(
        f"count MAE on {len(counts)} hand-counted frames: fp32 {mae[fp32]:.3f}, "
        f"int8 {mae[int8]:.3f}"
    )
    image = cv2.imread(str(image_path))
    found = dets[int8].detect(image)
    best = max((box_iou(box, MESSI_BOX) for box in found.boxes.tolist()), default=0.0)
    log(f"messi5.jpg: int8 finds {len(found)}, best IoU with the player {best:.2f}")
    if best < 0.7:
        raise SystemExit("int8 model does not find the player in messi5.jpg")
    if mae[int8] > mae[fp32] + MAX_MAE_DELTA:
        raise SystemExit(f"int8 count MAE {mae[int8]:.3f} is far from fp32's {mae[fp32]:.3f}")


def worker(argv: list[str]) -> None:
    import cv2
    import google.protobuf
    import numpy as np
    import onnx
    import onnxruntime as ort

    fp32, out, video, image = (Path(a) for a in argv)
    sys.path.insert(0, str(REPO_ROOT))
    from models.detector import PersonDetector

    log(
        f"tools: python {sys.version.split()[0]}, onnx {onnx.__version__} (protobuf "
        f"{google.protobuf.__version__}), onnxruntime "
        f"{ort.__version__}, numpy {np.__version__}, opencv {cv2.__version__}"
    )
    samples = calibration_set(video, image)
    log(f"calibration set: {len(samples)} samples: {describe_calibration()}")
    # The detector's own letterbox and normalisation, so calibration sees what it will see.
    pre = PersonDetector(fp32)
    blobs = [pre._preprocess(np.ascontiguousarray(img))[0] for _, img in samples]
    digest = hashlib.sha256()
    for blob in blobs:
        digest.update(blob.tobytes())
    log(f"calibration tensors sha256={digest.hexdigest()}")
    log("quantize_static: QDQ, MinMax, uint8 activations, int8 per-channel 8-bit weights")
    quantize(fp32, out, blobs)
    check(fp32, out, video, image)


if __name__ == "__main__":
    main()
