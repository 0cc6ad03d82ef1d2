"""``lookout count``: a folder of photos is photos, each counted and named on its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from models.detector import PersonDetector
from tests.cli import lookout
from tests.datafiles import data_file

pytestmark = pytest.mark.slow


def vtest_frame(index: int) -> np.ndarray:
    cap = cv2.VideoCapture(str(data_file("vtest.avi")))
    try:
        cap.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, frame = cap.read()
    finally:
        cap.release()
    assert ok
    return frame


def test_a_folder_is_counted_image_by_image_with_names_and_broken_ones_said(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    crowd = vtest_frame(300)
    cv2.imwrite(str(folder / "a_crowd.jpg"), crowd)
    cv2.imwrite(str(folder / "b_empty.png"), np.full((240, 320, 3), 200, np.uint8))
    shutil.copy(data_file("messi5.jpg"), folder / "c_messi.jpg")
    (folder / "d_broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 this is not a jpeg")
    expected = {
        "a_crowd.jpg": len(PersonDetector().detect(crowd)),
        "b_empty.png": 0,
        "c_messi.jpg": len(PersonDetector().detect(cv2.imread(str(data_file("messi5.jpg"))))),
    }
    assert expected["a_crowd.jpg"] >= 3  # so an empty photo right after it is a real test

    text = lookout("count", str(folder), timeout=120)
    assert text.returncode == 1, text.stderr  # one image could not be read
    lines = text.stdout.splitlines()
    people = {n: "person" if n == 1 else "people" for n in expected.values()}
    assert lines == [f"{name}: {n} {people[n]}" for name, n in expected.items()]
    errors = text.stderr.strip().splitlines()
    assert any("d_broken.jpg" in line for line in errors), text.stderr
    assert errors[-1] == "lookout: 1 of 4 images could not be read"
    assert "Traceback" not in text.stderr

    as_json = lookout("count", str(folder), "--json", timeout=120)
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    # No smoothing across unrelated photos: each count is what its own photo shows.
    assert {r["file"]: (r["count"], r["raw"]) for r in records} == {
        name: (n, n) for name, n in expected.items()
    }
