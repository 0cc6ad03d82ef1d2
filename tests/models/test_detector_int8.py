"""The shipped int8 NanoDet (models/nanodet-g-416-int8.onnx) on real images, and --precision
from the setting to the detector that runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from device.app.parts import detector_factory
from device.config import Config
from models.detections import box_iou
from models.detector import (
    DEFAULT_MODEL_PATH,
    INT8_MODEL_PATH,
    DetectorError,
    PersonDetector,
    sha256_file,
    shipped_model,
)
from tests.cli import lookout, lookout_in_process
from tests.datafiles import TEST_DATA, data_file

pytestmark = pytest.mark.slow

HAND_COUNTS: dict[int, int] = {
    int(k): int(v)
    for k, v in json.loads((TEST_DATA / "vtest_counts.json").read_text())["counts"].items()
}
MEDIAN_EVERY = 16
MESSI_BOX = (68.0, 60.0, 458.0, 336.0)  # as in test_detector.py
# 3x3 tiles (frame, tile 1..9) where fp32 finds a person near the threshold that int8 does
# not (scripts/bench/detector.py lists them): they tell which model a command ran.
DIFFERING_TILES = ((440, 5), (540, 1))


def tile(frame: np.ndarray, k: int) -> np.ndarray:
    h, w = frame.shape[:2]
    r, c = divmod(k - 1, 3)
    return frame[r * h // 3 : (r + 1) * h // 3, c * w // 3 : (c + 1) * w // 3]


@pytest.fixture(scope="module")
def int8() -> PersonDetector:
    return PersonDetector(INT8_MODEL_PATH)


@pytest.fixture(scope="module")
def fp32() -> PersonDetector:
    return PersonDetector(DEFAULT_MODEL_PATH)


@pytest.fixture(scope="module")
def frames() -> dict[int, np.ndarray]:
    wanted = set(HAND_COUNTS) | {i for i, _ in DIFFERING_TILES}
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    out: dict[int, np.ndarray] = {}
    index = 0
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            if index in wanted or index % MEDIAN_EVERY == 0:
                out[index] = frame
            index += 1
    finally:
        cap.release()
    assert wanted <= set(out)
    return out


def test_int8_file_is_the_one_models_readme_describes() -> None:
    readme = (INT8_MODEL_PATH.parent / "README.md").read_text()
    section = readme[readme.index(f"## {INT8_MODEL_PATH.name}") :]
    m = re.search(r"File sha256\s*\|\s*`([0-9a-f]{64})`", section)
    assert m, "models/README.md has no 'File sha256' row for the int8 file"
    assert sha256_file(INT8_MODEL_PATH) == m.group(1)
    assert sha256_file(DEFAULT_MODEL_PATH) in section  # made from the shipped fp32 file


def test_int8_loads_as_nanodet_416_and_is_quantised(int8: PersonDetector) -> None:
    assert int8.kind == "nanodet" and int8.input_size == (416, 416)
    assert INT8_MODEL_PATH.stat().st_size < DEFAULT_MODEL_PATH.stat().st_size / 3


def test_int8_finds_the_player_in_messi5(int8: PersonDetector) -> None:
    dets = int8.detect(cv2.imread(str(data_file("messi5.jpg"))))
    assert max(box_iou(box, MESSI_BOX) for box in dets.boxes.tolist()) >= 0.7


def test_int8_counts_vtest_like_fp32(
    int8: PersonDetector, fp32: PersonDetector, frames: dict[int, np.ndarray]
) -> None:
    ours = {i: len(int8.detect(frames[i])) for i in HAND_COUNTS}
    theirs = {i: len(fp32.detect(frames[i])) for i in HAND_COUNTS}
    diff = [abs(ours[i] - theirs[i]) for i in HAND_COUNTS]
    assert max(diff) <= 1 and np.mean(diff) <= 0.25, f"int8 {ours} fp32 {theirs}"
    mae = float(np.mean([abs(ours[i] - n) for i, n in HAND_COUNTS.items()]))
    assert mae <= 0.5, f"int8 count MAE {mae:.3f} against the hand counts"


def test_int8_sees_nobody_in_the_empty_scene(
    int8: PersonDetector, frames: dict[int, np.ndarray]
) -> None:
    spread = [f for i, f in sorted(frames.items()) if i % MEDIAN_EVERY == 0]
    background = np.median(np.stack(spread), axis=0).astype(np.uint8)
    assert len(int8.detect(background)) == 0


# ------------------------------------------------------------------ --precision


def test_precision_picks_the_shipped_file_and_an_explicit_detector_wins(tmp_path: Path) -> None:
    assert shipped_model("fp32") == DEFAULT_MODEL_PATH
    assert shipped_model("int8") == INT8_MODEL_PATH
    with pytest.raises(DetectorError, match="int4"):
        shipped_model("int4")
    assert Config().perception.precision == "auto"  # models/choice.py: fp32 unless...
    ort = {"backend": "onnxruntime"}
    assert detector_factory(Config.of(precision="fp32", **ort))().path == DEFAULT_MODEL_PATH
    assert detector_factory(Config.of(precision="int8", **ort))().path == INT8_MODEL_PATH
    own = tmp_path / "own.onnx"
    own.write_bytes(DEFAULT_MODEL_PATH.read_bytes())
    built = detector_factory(Config.of(precision="int8", detector=own, **ort))()
    assert built.path == own


def test_lookout_count_precision_int8_runs_the_int8_model(
    tmp_path: Path, int8: PersonDetector, fp32: PersonDetector, frames: dict[int, np.ndarray]
) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    images = {"a_messi.png": cv2.imread(str(data_file("messi5.jpg")))}
    for i, k in DIFFERING_TILES:
        images[f"tile_{i}_{k}.png"] = tile(frames[i], k)
    for name, image in images.items():
        cv2.imwrite(str(folder / name), image)  # PNG: the pixels the detectors saw

    def lines(det: PersonDetector) -> list[str]:
        counts = {name: len(det.detect(img)) for name, img in images.items()}
        return [f"{name}: {n} {'person' if n == 1 else 'people'}" for name, n in counts.items()]

    assert lines(int8) != lines(fp32)  # else this test could not tell them apart
    got = lookout("count", str(folder), "--precision", "int8", timeout=120)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == lines(int8)
    fp32_ort = ("--precision", "fp32", "--backend", "onnxruntime")
    default = lookout("count", str(folder), *fp32_ort, timeout=120)
    assert default.stdout.splitlines() == lines(fp32)
    one = lookout("count", str(data_file("messi5.jpg")), "--precision", "int8", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout.splitlines()[0])["raw"] == len(int8.detect(images["a_messi.png"]))


@pytest.mark.parametrize("command", ["run", "count", "doctor", "ask"])
def test_a_bad_precision_is_one_line_and_exit_2(command: str) -> None:
    args = {"count": ["count", "x.jpg"], "ask": ["ask", "how many?"]}.get(command, [command])
    result = lookout_in_process(*args, "--precision", "int4")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--precision" in lines[0] and "int4" in lines[0], result.stderr


def test_a_bad_precision_in_the_config_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "lookout.toml"
    config.write_text('precision = "fp16"\n')
    result = lookout_in_process("run", "--config", str(config))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "precision" in lines[0] and str(config) in lines[0], result.stderr


def test_doctor_checks_the_int8_file() -> None:
    result = lookout("doctor", "--source", str(data_file("vtest.avi")), "--precision", "int8")
    assert result.returncode == 0, result.stdout + result.stderr
    # The sha256 check against models/README.md ran too: a mismatch is a FAIL.
    line = re.search(
        rf"\[ *(ok|warn)\] detector +{re.escape(INT8_MODEL_PATH.name)} \(nanodet\) loads "
        r"\((onnxruntime|openvino)[^)]*\); "
        r"a detection takes (\d+) ms here \(one thread\): the default 2 a second is (\d+)% "
        r"of a core",
        result.stdout,
    )
    assert line, result.stdout
    # What a Pi user needs from doctor: the measured cost at the default rate, consistent.
    ms, share = int(line.group(3)), int(line.group(4))
    assert ms > 0 and abs(share - ms * 2 / 10) <= 1
    assert (line.group(1) == "warn") == (share > 25)
