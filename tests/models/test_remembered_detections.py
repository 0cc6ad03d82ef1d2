"""The tests' remembered detections (tests/detection_cache.py): an answer is the real
detector's for exactly those pixels and that detector, here and in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.detector import INT8_MODEL_PATH, PersonDetector
from tests.cameras import vtest_frames
from tests.datafiles import REPO_ROOT, data_file
from tests.detection_cache import ENV, remembered


def same(a: object, b: object) -> bool:
    return (
        np.array_equal(a.boxes, b.boxes)  # type: ignore[attr-defined]
        and np.array_equal(a.scores, b.scores)  # type: ignore[attr-defined]
    )


def test_an_answer_is_the_real_detectors_for_the_same_pixels_and_settings(
    tmp_path: Path,
) -> None:
    frames = vtest_frames(6)
    first, other = frames[0], frames[5]
    real = PersonDetector(threshold=0.2)
    expected = real.detect(first)
    assert len(expected) >= 3  # people in view: an answer worth comparing
    strict = PersonDetector(threshold=0.45).detect(first)
    assert len(strict) < len(expected)
    environ = dict(os.environ)
    real_detect = PersonDetector.detect
    with remembered(tmp_path / "answers") as cache:
        detector = PersonDetector(threshold=0.2)
        assert same(detector.detect(first), expected) and (cache.misses, cache.hits) == (1, 0)
        again = detector.detect(first.copy())  # the same pixels, another array
        assert same(again, expected) and (cache.misses, cache.hits) == (1, 1)
        again.boxes[:] = 0  # whoever gets an answer may change it: not the next one's
        assert same(detector.detect(first), expected)
        # Another picture, another pixel, another threshold or model: the real detector.
        assert same(detector.detect(other), real.detect(other))
        touched = first.copy()
        touched[300, 400, 1] ^= 1
        detector.detect(touched)
        assert same(PersonDetector(threshold=0.45).detect(first), strict)
        PersonDetector(INT8_MODEL_PATH, threshold=0.2).detect(first)
        assert cache.misses == 5
        # A frame the real detector refuses is refused as before.
        with pytest.raises(ValueError, match="HxWx3 uint8"):
            detector.detect(np.zeros((4, 4), np.float32))
        assert os.environ[ENV] == str(tmp_path / "answers")
    assert PersonDetector.detect is real_detect and dict(os.environ) == environ
    assert len(list((tmp_path / "answers").rglob("*.npy"))) == 5


PROBE = """
import json, sys
import cv2
from models.detector import PersonDetector
ok, frame = cv2.VideoCapture(sys.argv[1]).read()
found = PersonDetector(threshold=0.2).detect(frame)
cache = getattr(PersonDetector.detect, "remembered", None)
print(json.dumps({"boxes": found.boxes.tolist(), "scores": found.scores.tolist(),
                  "hits": cache.hits if cache else None}))
"""


def probe() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(data_file("vtest.avi"))], cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.slow
def test_a_process_started_meanwhile_answers_from_the_same_folder(tmp_path: Path) -> None:
    (first,) = vtest_frames(1)
    with remembered(tmp_path / "answers") as cache:
        expected = PersonDetector(threshold=0.2).detect(first)
        assert cache.misses == 1
        told = probe()
    assert told["hits"] == 1  # answered from the file this process wrote
    assert np.array_equal(np.asarray(told["boxes"], np.float32), expected.boxes)
    assert np.array_equal(np.asarray(told["scores"], np.float32), expected.scores)
    assert probe()["hits"] is None  # outside: the real detector, unpatched
