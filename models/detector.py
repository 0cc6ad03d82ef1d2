"""Offline person detector: the model's pre- and post-processing around an inference backend.

Default model: NanoDet-g 416 (see models/README.md for provenance). A user-supplied
YOLOv8/YOLO11-style export (one output [1, 4+C, N], class 0 = person) works as well; which
of the two a file is gets decided from its output shapes, never from output names.
Making the input tensor (letterbox, normalise) and reading boxes from the outputs
(decode, NMS) are the model's, here, in numpy and OpenCV; running the network is the
backend's (``models/backend.py``: ONNX Runtime on the CPU by default).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from device.files.input_file import MODEL_MAX, check_input
from models.backend import BackendError, InferenceBackend, OnnxRuntimeBackend
from models.detections import Detections, FloatArray

__all__ = [
    "DEFAULT_MODEL_PATH",
    "INT8_MODEL_PATH",
    "SHIPPED_MODELS",
    "DetectTiming",
    "Detections",
    "DetectorError",
    "Letterbox",
    "PersonDetector",
    "decode_nanodet",
    "decode_yolo",
    "letterbox",
    "nms",
    "sha256_file",
    "shipped_model",
]

DEFAULT_MODEL_PATH: Path = Path(__file__).parent / "nanodet-g-416.onnx"
# Static int8 (QDQ) of the same model: scripts/quantize_detector.py, provenance in README.md.
INT8_MODEL_PATH: Path = Path(__file__).parent / "nanodet-g-416-int8.onnx"
SHIPPED_MODELS: dict[str, Path] = {"fp32": DEFAULT_MODEL_PATH, "int8": INT8_MODEL_PATH}

# NanoDet was trained on BGR images normalised with these (ImageNet statistics in BGR order).
NANODET_MEAN = np.array([103.53, 116.28, 123.675], dtype=np.float32)
NANODET_STD = np.array([57.375, 57.12, 58.395], dtype=np.float32)
NANODET_STRIDES = (8, 16, 32)
NANODET_BINS = 11  # reg_max 10: each side is a distribution over distances 0..10 strides
_BIN_VALUES = np.arange(NANODET_BINS, dtype=np.float32)
YOLO_PAD_VALUE = 114  # Ultralytics letterboxes with grey 114
YOLO_DEFAULT_SIZE = 640  # for exports with a dynamic input shape
PERSON = 0


class DetectorError(Exception):
    """The model file is missing, unreadable or not a detector this module understands."""


@dataclass
class DetectTiming:
    preprocess_ms: float = 0.0
    inference_ms: float = 0.0
    decode_ms: float = 0.0


@dataclass(frozen=True)
class Letterbox:
    """How a frame was placed on the network canvas, to map boxes back."""

    scale: float
    pad_x: int
    pad_y: int
    frame_w: int
    frame_h: int

    def to_frame(self, boxes: FloatArray) -> FloatArray:
        out = np.empty_like(boxes)
        out[:, 0::2] = (boxes[:, 0::2] - self.pad_x) / self.scale
        out[:, 1::2] = (boxes[:, 1::2] - self.pad_y) / self.scale
        np.clip(out[:, 0::2], 0.0, self.frame_w, out=out[:, 0::2])
        np.clip(out[:, 1::2], 0.0, self.frame_h, out=out[:, 1::2])
        return out


def sha256_file(path: PathLike[str] | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def shipped_model(precision: str) -> Path:
    """The shipped NanoDet-g 416 file of a precision ("fp32" or "int8")."""
    try:
        return SHIPPED_MODELS[precision]
    except KeyError:
        raise DetectorError(
            f"no shipped detector of precision {precision!r} (one of {', '.join(SHIPPED_MODELS)})"
        ) from None


def letterbox(
    frame: NDArray[np.uint8], in_w: int, in_h: int, pad_value: int = 0
) -> tuple[NDArray[np.uint8], Letterbox]:
    """Aspect-preserving resize, centred on an in_w x in_h canvas filled with pad_value."""
    h, w = frame.shape[:2]
    s = min(in_w / w, in_h / h)
    # max(1, .): a 1-pixel-high panorama must not round to an empty resize.
    new_w, new_h = max(1, round(w * s)), max(1, round(h * s))
    pad_x, pad_y = (in_w - new_w) // 2, (in_h - new_h) // 2
    canvas = np.full((in_h, in_w, 3), pad_value, dtype=np.uint8)
    canvas[pad_y : pad_y + new_h, pad_x : pad_x + new_w] = cv2.resize(
        frame, (new_w, new_h), interpolation=cv2.INTER_LINEAR
    )
    return canvas, Letterbox(s, pad_x, pad_y, w, h)


def nms(boxes: FloatArray, scores: FloatArray, iou: float) -> NDArray[np.intp]:
    """Greedy NMS; returns kept indices, best score first (ties keep input order)."""
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    areas = np.maximum(x2 - x1, 0.0) * np.maximum(y2 - y1, 0.0)
    keep: list[int] = []
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        iw = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0)
        ih = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0)
        inter = iw * ih
        union = areas[i] + areas[rest] - inter
        # Two zero-area boxes have union 0: treat as not overlapping rather than divide by 0.
        overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = rest[overlap <= iou]
    return np.asarray(keep, dtype=np.intp)


def decode_nanodet(
    levels: list[tuple[FloatArray, FloatArray, int, int]],
    lb: Letterbox,
    threshold: float,
    iou: float,
) -> Detections:
    """levels: (scores [N, C] after sigmoid, box distributions [N, 4*11], stride, grid width)."""
    all_boxes: list[FloatArray] = []
    all_scores: list[FloatArray] = []
    for cls, reg, stride, grid_w in levels:
        person = cls[:, PERSON]
        idx = np.flatnonzero(person >= threshold)
        if idx.size == 0:
            continue
        bins = reg[idx].reshape(-1, 4, NANODET_BINS).astype(np.float32, copy=False)
        # Softmax expectation, not argmax: distances are fractional strides.
        e = np.exp(bins - bins.max(axis=2, keepdims=True))
        dist = (e @ _BIN_VALUES) / e.sum(axis=2) * np.float32(stride)  # (k, 4): l, t, r, b
        cx = ((idx % grid_w).astype(np.float32) + 0.5) * stride
        cy = ((idx // grid_w).astype(np.float32) + 0.5) * stride
        boxes = np.stack(
            [cx - dist[:, 0], cy - dist[:, 1], cx + dist[:, 2], cy + dist[:, 3]], axis=1
        ).astype(np.float32, copy=False)
        all_boxes.append(boxes)
        all_scores.append(person[idx].astype(np.float32, copy=False))
    return _finish(all_boxes, all_scores, lb, iou)


def decode_yolo(out: FloatArray, lb: Letterbox, threshold: float, iou: float) -> Detections:
    """out: [4+C, N] rows cx, cy, w, h (input pixels), then per-class scores."""
    person = out[4 + PERSON]
    idx = np.flatnonzero(person >= threshold)
    if idx.size == 0:
        return Detections.empty()
    cx, cy, w, h = (out[k, idx].astype(np.float32, copy=False) for k in range(4))
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    return _finish([boxes], [person[idx].astype(np.float32, copy=False)], lb, iou)


def _finish(
    boxes: list[FloatArray], scores: list[FloatArray], lb: Letterbox, iou: float
) -> Detections:
    if not boxes:
        return Detections.empty()
    b = lb.to_frame(np.concatenate(boxes).astype(np.float32, copy=False))
    s = np.concatenate(scores).astype(np.float32, copy=False)
    keep = nms(b, s, iou)
    return Detections(np.ascontiguousarray(b[keep]), np.ascontiguousarray(s[keep]))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


class PersonDetector:
    """Counts people in BGR frames. One call at a time; the lock makes that so."""

    kind: str
    last_timing: DetectTiming

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        threshold: float = 0.45,
        iou: float = 0.5,
        threads: int | None = None,
        backend: Callable[[Path], InferenceBackend] | None = None,
    ) -> None:
        """``backend``: what runs the network, made from the model's path (default: ONNX
        Runtime on the CPU with ``threads`` per inference)."""
        self.path = Path(path) if path is not None else DEFAULT_MODEL_PATH
        self.threshold = float(threshold)
        self.iou = float(iou)
        self.last_timing = DetectTiming()
        self._lock = threading.Lock()
        try:  # the runtime reads it whole: a pipe would hang it, /dev/zero fill the memory
            check_input(self.path, MODEL_MAX)
        except FileNotFoundError:
            raise DetectorError(f"detector model not found: {self.path}") from None
        except OSError as exc:
            raise DetectorError(f"detector model {self.path}: {exc.strerror}") from None
        try:
            self.backend = (
                backend(self.path)
                if backend is not None
                else OnnxRuntimeBackend(self.path, threads=threads)
            )
        except BackendError as exc:
            raise DetectorError(str(exc)) from None
        dims = self.backend.input_dims
        if len(dims) != 4 or self.backend.input_type != "tensor(float)":
            got = (dims, self.backend.input_type)
            raise DetectorError(f"{self.path}: expected one float input [1,3,H,W], got {got}")
        if dims[1] not in (3, None) and not isinstance(dims[1], str):
            raise DetectorError(f"{self.path}: input has {dims[1]} channels, expected 3")

        # Output shapes can be symbolic in the file; one run on a blank canvas gives the real
        # ones (and warms the session up so the first real frame is not slow).
        static = all(isinstance(d, int) and d > 0 for d in dims[2:])
        size = (int(dims[3]), int(dims[2])) if static else (YOLO_DEFAULT_SIZE, YOLO_DEFAULT_SIZE)
        self.input_size: tuple[int, int] = size  # (w, h)
        try:
            probe = self.backend.run(np.zeros((1, 3, size[1], size[0]), np.float32))
        except Exception as exc:
            raise DetectorError(f"{self.path}: test inference failed: {_one_line(exc)}") from None
        shapes = [tuple(int(d) for d in np.shape(o)) for o in probe]
        self._levels: list[tuple[int, int, int, int]] = []  # (cls idx, reg idx, stride, grid_w)
        if self._match_nanodet(shapes):
            self.kind = "nanodet"
        elif (
            len(shapes) == 1
            and len(shapes[0]) == 3
            and shapes[0][0] == 1
            and (4 < shapes[0][1] < shapes[0][2])
        ):
            self.kind = "yolo"
        else:
            raise DetectorError(
                f"{self.path}: unrecognised outputs {shapes}; expected NanoDet (6 x [1,N,C] score"
                f" and [1,N,44] box tensors) or YOLOv8/11 ([1,4+C,N])"
            )

    def _match_nanodet(self, shapes: list[tuple[int, ...]]) -> bool:
        in_w, in_h = self.input_size
        if len(shapes) != 2 * len(NANODET_STRIDES):
            return False
        if any(len(s) != 3 or s[0] != 1 for s in shapes):
            return False
        levels: list[tuple[int, int, int, int]] = []
        for stride in NANODET_STRIDES:
            grid_w, grid_h = math.ceil(in_w / stride), math.ceil(in_h / stride)
            at_level = [k for k, s in enumerate(shapes) if s[1] == grid_w * grid_h]
            reg = [k for k in at_level if shapes[k][2] == 4 * NANODET_BINS]
            cls = [k for k in at_level if shapes[k][2] != 4 * NANODET_BINS]
            if len(reg) != 1 or len(cls) != 1:
                return False
            levels.append((cls[0], reg[0], stride, grid_w))
        self._levels = levels
        return True

    def _check_frame(self, frame_bgr: Any) -> NDArray[np.uint8]:
        if not isinstance(frame_bgr, np.ndarray):
            raise ValueError(f"frame must be a numpy array, got {type(frame_bgr).__name__}")
        if frame_bgr.dtype != np.uint8 or frame_bgr.ndim != 3 or frame_bgr.shape[2] != 3:
            raise ValueError(
                f"frame must be HxWx3 uint8 (BGR), got shape {frame_bgr.shape} {frame_bgr.dtype}"
            )
        if frame_bgr.shape[0] == 0 or frame_bgr.shape[1] == 0:
            raise ValueError(f"frame is empty: shape {frame_bgr.shape}")
        return np.ascontiguousarray(frame_bgr)

    def _preprocess(self, frame: NDArray[np.uint8]) -> tuple[FloatArray, Letterbox]:
        in_w, in_h = self.input_size
        blob = np.empty((1, 3, in_h, in_w), np.float32)
        if self.kind == "nanodet":
            canvas, lb = letterbox(frame, in_w, in_h, 0)
            channels, mean, std = cv2.split(canvas), NANODET_MEAN, NANODET_STD  # BGR kept
        else:
            canvas, lb = letterbox(frame, in_w, in_h, YOLO_PAD_VALUE)
            channels = cv2.split(canvas)[::-1]  # RGB
            mean, std = np.zeros(3, np.float32), np.full(3, 255.0, np.float32)
        # Per plane straight into the NCHW buffer: ~10x faster than an HWC float image
        # followed by a transpose, and the same numbers.
        for k in range(3):
            np.subtract(channels[k], mean[k], out=blob[0, k], dtype=np.float32)
            np.divide(blob[0, k], std[k], out=blob[0, k])
        return blob, lb

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        frame = self._check_frame(frame_bgr)
        with self._lock:
            t0 = time.perf_counter()
            blob, lb = self._preprocess(frame)
            t1 = time.perf_counter()
            outs = self.backend.run(blob)
            t2 = time.perf_counter()
            if self.kind == "nanodet":
                levels = [
                    (np.asarray(outs[c][0]), np.asarray(outs[r][0]), stride, grid_w)
                    for c, r, stride, grid_w in self._levels
                ]
                dets = decode_nanodet(levels, lb, self.threshold, self.iou)
            else:
                dets = decode_yolo(np.asarray(outs[0][0]), lb, self.threshold, self.iou)
            t3 = time.perf_counter()
            self.last_timing = DetectTiming((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3)
        return dets
