"""models.detector: the committed NanoDet model on real footage, the decoders, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from models.backend import BackendError, OnnxRuntimeBackend
from models.detections import box_iou
from models.detector import (
    DEFAULT_MODEL_PATH,
    NANODET_BINS,
    Detections,
    DetectorError,
    DetectTiming,
    Letterbox,
    PersonDetector,
    decode_nanodet,
    decode_yolo,
    letterbox,
    nms,
    sha256_file,
)
from tests.datafiles import TEST_DATA, data_file

pytestmark = pytest.mark.slow

HAND_COUNTS: dict[int, int] = {
    int(k): int(v)
    for k, v in json.loads((TEST_DATA / "vtest_counts.json").read_text())["counts"].items()
}
MEDIAN_EVERY = 16  # 795 frames / 16 -> 50 frames spread over the whole video
# Where the player is in messi5.jpg (x1, y1, x2, y2), read off the image by eye.
MESSI_BOX = (68.0, 60.0, 458.0, 336.0)


@pytest.fixture(scope="module")
def detector() -> PersonDetector:
    return PersonDetector()


@pytest.fixture(scope="module")
def vtest_frames() -> dict[int, np.ndarray]:
    """Hand-counted frames plus every MEDIAN_EVERY-th frame, read sequentially (no seeking:
    seeking in this AVI is not frame-exact on every OpenCV build)."""
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    frames: dict[int, np.ndarray] = {}
    index = 0
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            if index in HAND_COUNTS or index % MEDIAN_EVERY == 0:
                frames[index] = frame
            index += 1
    finally:
        cap.release()
    assert set(HAND_COUNTS) <= set(frames), "vtest.avi is shorter than expected"
    return frames


# ------------------------------------------------------------------ the committed model


def test_model_sha256_matches_readme() -> None:
    readme = (DEFAULT_MODEL_PATH.parent / "README.md").read_text()
    m = re.search(r"File sha256\s*\|\s*`([0-9a-f]{64})`", readme)
    assert m, "models/README.md has no 'File sha256 | `...`' row"
    assert sha256_file(DEFAULT_MODEL_PATH) == m.group(1)


def test_model_loads_as_nanodet(detector: PersonDetector) -> None:
    assert detector.kind == "nanodet"
    assert detector.input_size == (416, 416)


def test_vtest_counts_close_to_hand_counts(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    errors = {i: len(detector.detect(vtest_frames[i])) - n for i, n in HAND_COUNTS.items()}
    mae = float(np.mean(np.abs(list(errors.values()))))
    assert len(HAND_COUNTS) >= 12
    assert mae <= 0.5, f"MAE {mae:.3f}; detector minus hand count per frame: {errors}"


def test_boxes_are_in_frame_and_sorted(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    dets = detector.detect(vtest_frames[250])
    assert dets.boxes.dtype == np.float32 and dets.scores.dtype == np.float32
    assert dets.boxes.shape == (len(dets), 4)
    h, w = vtest_frames[250].shape[:2]
    assert np.all(dets.boxes[:, 0] >= 0) and np.all(dets.boxes[:, 2] <= w)
    assert np.all(dets.boxes[:, 1] >= 0) and np.all(dets.boxes[:, 3] <= h)
    assert np.all(dets.boxes[:, 2] > dets.boxes[:, 0])
    assert np.all(dets.boxes[:, 3] > dets.boxes[:, 1])
    assert np.all(np.diff(dets.scores) <= 0)
    assert np.all(dets.scores >= detector.threshold)
    # Pedestrians are taller than wide.
    heights = dets.boxes[:, 3] - dets.boxes[:, 1]
    widths = dets.boxes[:, 2] - dets.boxes[:, 0]
    assert np.all(heights > widths)


def test_no_people_in_median_background(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    # The walkers never stand still long enough to survive a per-pixel median.
    spread = [f for i, f in sorted(vtest_frames.items()) if i % MEDIAN_EVERY == 0]
    assert len(spread) >= 45
    background = np.median(np.stack(spread), axis=0).astype(np.uint8)
    assert len(detector.detect(background)) == 0


def test_messi_found(detector: PersonDetector) -> None:
    image = cv2.imread(str(data_file("messi5.jpg")))
    assert image is not None
    dets = detector.detect(image)
    assert len(dets) >= 1
    assert max(box_iou(box, MESSI_BOX) for box in dets.boxes.tolist()) >= 0.7


def test_deterministic_and_timed(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    a = detector.detect(vtest_frames[100])
    b = detector.detect(vtest_frames[100].copy())
    np.testing.assert_array_equal(a.boxes, b.boxes)
    np.testing.assert_array_equal(a.scores, b.scores)
    t = detector.last_timing
    assert isinstance(t, DetectTiming)
    assert t.preprocess_ms > 0 and t.inference_ms > 0 and t.decode_ms > 0


def test_threads_option_gives_same_result(vtest_frames: dict[int, np.ndarray]) -> None:
    one = PersonDetector(threads=1).detect(vtest_frames[0])
    two = PersonDetector(threads=2).detect(vtest_frames[0])
    assert len(one) == len(two)
    np.testing.assert_allclose(one.boxes, two.boxes, atol=1e-2)


def test_non_contiguous_frame(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    frame = vtest_frames[0]
    wide = np.zeros((frame.shape[0], frame.shape[1] * 2, 3), np.uint8)
    wide[:, ::2] = frame
    assert len(detector.detect(wide[:, ::2])) == len(detector.detect(frame))


# ------------------------------------------------------------------ bad input


def test_missing_model_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.onnx"
    with pytest.raises(DetectorError, match=re.escape(str(path))) as info:
        PersonDetector(path)
    assert "\n" not in str(info.value)


def test_garbage_model_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"this is not an onnx model\x00\x01\x02" * 50)
    with pytest.raises(DetectorError, match=re.escape(str(path))) as info:
        PersonDetector(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "frame",
    [
        np.zeros((48, 64, 3), np.float32),
        np.zeros((48, 64), np.uint8),
        np.zeros((48, 64, 4), np.uint8),
        np.zeros((48, 64, 1), np.uint8),
        np.zeros((0, 64, 3), np.uint8),
        [[0, 0, 0]],
    ],
    ids=["float32", "gray", "bgra", "1-channel", "empty", "list"],
)
def test_bad_frames_rejected(detector: PersonDetector, frame: Any) -> None:
    with pytest.raises(ValueError):
        detector.detect(frame)


# ------------------------------------------------------------------ pure functions


def test_letterbox_geometry() -> None:
    frame = np.full((576, 768, 3), 200, np.uint8)
    canvas, lb = letterbox(frame, 416, 416, 0)
    assert canvas.shape == (416, 416, 3)
    assert lb.scale == pytest.approx(416 / 768)
    assert (lb.pad_x, lb.pad_y) == (0, 52)  # 312 rows of image, centred
    assert canvas[51, 200].tolist() == [0, 0, 0] and canvas[52, 200].tolist() == [200] * 3
    assert canvas[363, 200].tolist() == [200] * 3 and canvas[364, 200].tolist() == [0, 0, 0]
    back = lb.to_frame(np.array([[0, 52, 416, 364]], np.float32))
    np.testing.assert_allclose(back, [[0, 0, 768, 576]], atol=1e-3)


def test_letterbox_extreme_aspect() -> None:
    canvas, lb = letterbox(np.zeros((1, 2000, 3), np.uint8), 416, 416, 0)
    assert canvas.shape == (416, 416, 3) and lb.pad_y == 207


def test_nms_greedy() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [20, 20, 30, 30], [0, 0, 10, 10]], np.float32)
    scores = np.array([0.6, 0.9, 0.5, 0.6], np.float32)
    keep = nms(boxes, scores, 0.5)
    # 1 suppresses 0 and 3 (IoU 9/11); 2 is elsewhere.
    assert keep.tolist() == [1, 2]
    assert nms(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 0.5).tolist() == []


def _nanodet_levels(size: int = 416) -> list[tuple[np.ndarray, np.ndarray, int, int]]:
    levels = []
    for stride in (8, 16, 32):
        g = size // stride
        levels.append(
            (
                np.zeros((g * g, 80), np.float32),
                np.zeros((g * g, 4 * NANODET_BINS), np.float32),
                stride,
                g,
            )
        )
    return levels


def test_decode_nanodet_uses_softmax_expectation() -> None:
    levels = _nanodet_levels()
    cls, reg, _, g = levels[0]
    cell = 10 * g + 20  # centre ((20 + .5) * 8, (10 + .5) * 8) = (164, 84)
    cls[cell, 0] = 0.9
    cls[cell + 1, 1] = 0.99  # another class: ignored
    bins = np.full((4, NANODET_BINS), -50.0, np.float32)
    bins[0, 2] = 50.0  # left: 2 bins
    bins[1, [1, 2]] = 50.0  # top: 1 and 2 equally likely -> 1.5 (argmax would give 1)
    bins[2, 3] = 50.0  # right: 3
    bins[3, 4] = 50.0  # bottom: 4
    reg[cell] = bins.reshape(-1)
    lb = Letterbox(scale=1.0, pad_x=0, pad_y=0, frame_w=416, frame_h=416)
    dets = decode_nanodet(levels, lb, 0.45, 0.5)
    assert len(dets) == 1
    np.testing.assert_allclose(dets.boxes[0], [164 - 16, 84 - 12, 164 + 24, 84 + 32], atol=1e-3)
    assert dets.scores[0] == pytest.approx(0.9)


def test_decode_nanodet_undoes_letterbox_and_clips() -> None:
    levels = _nanodet_levels()
    cls, reg, _, _ = levels[2]  # stride 32, 13x13
    cls[0, 0] = 0.7  # centre (16, 16)
    bins = np.full((4, NANODET_BINS), -50.0, np.float32)
    bins[:, 1] = 50.0  # 32 px on every side
    reg[0] = bins.reshape(-1)
    lb = Letterbox(scale=0.5, pad_x=0, pad_y=10, frame_w=832, frame_h=500)
    dets = decode_nanodet(levels, lb, 0.45, 0.5)
    # (-16, -16, 48, 48) on the canvas -> ((-16 - 0) / .5, (-16 - 10) / .5, ...) clipped.
    np.testing.assert_allclose(dets.boxes, [[0, 0, 96, 76]], atol=1e-3)
    assert len(decode_nanodet(levels, lb, 0.8, 0.5)) == 0


def test_decode_yolo() -> None:
    n = 40
    out = np.zeros((4 + 3, n), np.float32)
    out[:4, 0] = [48, 32, 20, 30]
    out[4, 0] = 0.9
    out[:4, 1] = [49, 32, 20, 30]  # duplicate of 0, lower score: suppressed
    out[4, 1] = 0.8
    out[:4, 2] = [10, 30, 8, 16]
    out[4, 2] = 0.6
    out[:4, 3] = [70, 30, 8, 16]
    out[4, 3], out[5, 3] = 0.1, 0.95  # confident, but not a person
    lb = Letterbox(scale=0.32, pad_x=0, pad_y=16, frame_w=300, frame_h=100)
    dets = decode_yolo(out, lb, 0.45, 0.5)
    assert dets.scores.tolist() == pytest.approx([0.9, 0.6])
    np.testing.assert_allclose(
        dets.boxes[0], [38 / 0.32, (17 - 16) / 0.32, 58 / 0.32, (47 - 16) / 0.32], atol=1e-3
    )


def test_detections_empty() -> None:
    e = Detections.empty()
    assert len(e) == 0 and e.boxes.shape == (0, 4) and e.scores.shape == (0,)


# ------------------------------------------------------------------ synthetic ONNX models


def _const_model(path: Path, input_shape: list[Any], outputs: list[np.ndarray]) -> Path:
    """A model whose outputs are fixed tensors (+ 0 * mean(input) so the input is used)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("ReduceMean", ["images"], ["m"], axes=[1, 2, 3], keepdims=0),
        helper.make_node("Mul", ["m", "zero"], ["z"]),
    ]
    inits = [numpy_helper.from_array(np.zeros(1, np.float32), "zero")]
    outs = []
    for k, value in enumerate(outputs):
        inits.append(numpy_helper.from_array(value.astype(np.float32), f"c{k}"))
        nodes.append(helper.make_node("Add", [f"c{k}", "z"], [f"out{k}"]))
        outs.append(helper.make_tensor_value_info(f"out{k}", TensorProto.FLOAT, list(value.shape)))
    graph = helper.make_graph(
        nodes,
        "synthetic",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, input_shape)],
        outs,
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_yolo_model_end_to_end(tmp_path: Path) -> None:
    out = np.zeros((1, 4 + 2, 126), np.float32)  # 64x96 input: 8x12 + 4x6 + 2x3 anchors
    out[0, :4, 5] = [48, 32, 20, 30]
    out[0, 4, 5] = 0.9
    path = _const_model(tmp_path / "yolo.onnx", [1, 3, 64, 96], [out])
    det = PersonDetector(path)
    assert det.kind == "yolo" and det.input_size == (96, 64)
    frame = np.zeros((100, 300, 3), np.uint8)
    frame[..., 0] = 255  # pure blue in BGR
    dets = det.detect(frame)
    assert len(dets) == 1
    np.testing.assert_allclose(dets.boxes[0], [118.75, 3.125, 181.25, 96.875], atol=1e-3)
    blob, lb = det._preprocess(frame)
    assert blob.shape == (1, 3, 64, 96) and (lb.pad_x, lb.pad_y) == (0, 16)
    assert blob[0, :, 0, 0].tolist() == pytest.approx([114 / 255] * 3)  # grey padding
    assert blob[0, :, 32, 48].tolist() == pytest.approx([0.0, 0.0, 1.0])  # RGB order


def test_yolo_model_with_dynamic_input(tmp_path: Path) -> None:
    out = np.zeros((1, 84, 8400), np.float32)
    path = _const_model(tmp_path / "dyn.onnx", [1, 3, "h", "w"], [out])
    det = PersonDetector(path)
    assert det.kind == "yolo" and det.input_size == (640, 640)
    assert len(det.detect(np.zeros((480, 640, 3), np.uint8))) == 0


def test_unrecognised_outputs(tmp_path: Path) -> None:
    path = _const_model(tmp_path / "cls.onnx", [1, 3, 32, 32], [np.zeros((1, 1000), np.float32)])
    with pytest.raises(DetectorError, match=re.escape(str(path))) as info:
        PersonDetector(path)
    assert "unrecognised outputs" in str(info.value)


def test_nanodet_outputs_found_by_shape_in_any_order(tmp_path: Path) -> None:
    shapes = [(1, 169, 44), (1, 2704, 80), (1, 676, 44), (1, 169, 80), (1, 2704, 44), (1, 676, 80)]
    outs = [np.zeros(s, np.float32) for s in shapes]
    outs[5][0, 26 * 3 + 4, 0] = 0.8  # stride-16 score tensor, cell (4, 3)
    path = _const_model(tmp_path / "nd.onnx", [1, 3, 416, 416], outs)
    det = PersonDetector(path)
    assert det.kind == "nanodet"
    dets = det.detect(np.zeros((416, 416, 3), np.uint8))
    # All-zero logits: each side's distance is the mean bin, 5 strides = 80 px.
    cx, cy = 4.5 * 16, 3.5 * 16
    np.testing.assert_allclose(dets.boxes, [[0, 0, cx + 80, cy + 80]], atol=1e-3)


class CountingBackend:
    """Another backend through the seam: ONNX Runtime, counting the tensors it is given."""

    def __init__(self, path: Path) -> None:
        self.inner = OnnxRuntimeBackend(path, threads=1)
        self.runs = 0
        self.input_dims = self.inner.input_dims
        self.input_type = self.inner.input_type

    def run(self, blob: np.ndarray) -> list[np.ndarray]:
        self.runs += 1
        return self.inner.run(blob)


def test_a_backend_runs_the_network_and_the_detector_keeps_its_pre_and_post_processing(
    detector: PersonDetector, vtest_frames: dict[int, np.ndarray]
) -> None:
    made: list[CountingBackend] = []

    def backend(path: Path) -> CountingBackend:
        made.append(CountingBackend(path))
        return made[-1]

    other = PersonDetector(backend=backend)
    frame = next(iter(vtest_frames.values()))
    mine, theirs = other.detect(frame), detector.detect(frame)
    assert np.array_equal(mine.boxes, theirs.boxes) and np.array_equal(mine.scores, theirs.scores)
    assert made[0].runs == 2  # the probe of the outputs' shapes, then the frame


def test_a_backend_that_cannot_load_the_model_is_one_line(tmp_path: Path) -> None:
    def refuses(path: Path) -> OnnxRuntimeBackend:
        raise BackendError(f"cannot load ONNX model {path}: no such runtime here")

    with pytest.raises(DetectorError, match=r"^cannot load ONNX model .*: no such runtime here$"):
        PersonDetector(backend=refuses)
