"""``--snapshots-privacy``: faces hides every detected person's head, boxes keeps no camera
pixel, none is the picture as before.

The snapshot output on a real frame of the sample video with the real detector's and
tracker's boxes (``Perception``), and the real command for the setting's way in (its
environment variable) and its refusal.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from device.app.count import perceive_video
from device.events import LineCrossed, SnapshotSaved
from device.outputs.page.render import BOX_COLOR, DisplayFrame, SceneGeometry, render_jpeg
from device.outputs.pictures import snapshots as snapshots_module
from device.outputs.pictures.privacy import BACKGROUND, head_region, person_boxes
from device.outputs.pictures.snapshots import Snapshots
from device.vision.percept import Percept
from device.vision.perception import Perception
from live.events import Event
from models.detector import PersonDetector
from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file

JPEG_MARGIN = 16  # pixels: a JPEG block (with its chroma) that touches a change may change


@pytest.fixture(scope="module")
def percept() -> Percept:
    """What perception made of frame 100 of the sample video: real boxes, real tracks."""
    seen: list[Percept] = []
    perception = Perception(
        PersonDetector(threshold=0.2), detect_fps=2.0, threshold=0.45, on_percept=seen.append
    )
    # 2 detections a second of this 10 fps video
    perceive_video(perception, data_file("vtest.avi"), every=5, limit=101)
    last = seen[-1]
    assert last.frame.index == 100 and len(last.people) >= 4  # a busy moment
    return last


def snapshot(folder: Path, percept: Percept, privacy: Any) -> np.ndarray:
    """The snapshot the output writes of a crossing at ``percept``'s frame, decoded."""
    folder.mkdir(parents=True, exist_ok=True)
    said: list[Event] = []
    out = Snapshots(
        folder, run_id="0123456789ab", publish=said.append, geometry=SceneGeometry(),
        max_bytes=10_000_000, max_age_s=86_400.0, quiet_s=10.0, privacy=privacy,
        close_wait_s=30.0,  # what was queued is written, however busy the machine
    )  # fmt: skip
    out.write(
        LineCrossed(
            line="post", direction="in", track=1, t_media=percept.t_media, total_in=1,
            total_out=0,
        )
    )  # fmt: skip
    out.on_percept(percept)
    out.close()
    (saved,) = [e for e in said if isinstance(e, SnapshotSaved)]
    assert out.written == 1
    image = cv2.imread(str(folder / saved.file))
    assert image is not None
    return image


def high_frequency(image: np.ndarray) -> np.ndarray:
    """Per-pixel detail: the absolute Laplacian of the grey picture (edges, features)."""
    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float64)
    return np.abs(cv2.Laplacian(grey, cv2.CV_64F))


def drawn_green(image: np.ndarray) -> int:
    return int((np.abs(image.astype(int) - np.array(BOX_COLOR)).max(axis=2) <= 30).sum())


def test_faces_hides_each_persons_head_and_leaves_the_rest_of_the_frame_as_it_was(
    tmp_path: Path, percept: Percept
) -> None:
    original = percept.frame.image.copy()
    plain = snapshot(tmp_path / "none", percept, "none")
    hidden = snapshot(tmp_path / "faces", percept, "faces")
    height, width = plain.shape[:2]
    plain_detail, hidden_detail = high_frequency(plain), high_frequency(hidden)
    kept = np.ones((height, width), bool)  # what faces must not touch
    ratios = []
    for box in person_boxes(DisplayFrame.of(percept, 1, SceneGeometry())):
        region = head_region(box, width, height)
        assert region is not None
        x0, y0, x1, y1 = region
        m = JPEG_MARGIN
        kept[max(0, y0 - m) : y1 + m, max(0, x0 - m) : x1 + m] = False
        # Inside the box, under its drawn top edge and id: the head itself.
        bx0, by0, bx1, by1 = (round(v) for v in box)
        inside = (slice(by0 + 4, round(by0 + 0.25 * (by1 - by0))), slice(bx0 + 4, bx1 - 3))
        ratios.append(hidden_detail[inside].mean() / plain_detail[inside].mean())
    # Every head lost most of its detail: a face is a blur of a few colours.
    assert max(ratios) < 0.5, ratios
    assert float(np.mean(ratios)) < 0.4, ratios
    # Away from the heads, not a pixel changed: the scene stays as useful as before.
    assert kept.mean() > 0.8
    assert int(np.abs(plain.astype(int) - hidden.astype(int))[kept].max()) <= 2
    # The boxes and ids are still drawn over it.
    assert drawn_green(hidden) > 200
    # The frame the page and the other outputs show is not touched.
    assert np.array_equal(percept.frame.image, original)


def test_boxes_keeps_no_camera_pixel_only_what_was_drawn(tmp_path: Path, percept: Percept) -> None:
    picture = snapshot(tmp_path, percept, "boxes")
    grey = cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY).astype(np.float64).ravel()
    frame = cv2.cvtColor(percept.frame.image, cv2.COLOR_BGR2GRAY).astype(np.float64).ravel()
    assert abs(np.corrcoef(grey, frame)[0, 1]) < 0.1
    # Most of it is the plain background; the people are their boxes.
    plain = np.abs(picture.astype(int) - np.array(BACKGROUND)).max(axis=2) <= 4
    assert plain.mean() > 0.9
    assert drawn_green(picture) > 200


def test_none_is_the_picture_the_page_draws(tmp_path: Path, percept: Percept) -> None:
    picture = snapshot(tmp_path, percept, "none")
    drawn = render_jpeg(DisplayFrame.of(percept, 1, SceneGeometry()), 80)
    page = cv2.imdecode(np.frombuffer(drawn, np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(picture, page)


def test_the_pixels_are_hidden_in_the_writer_thread(
    tmp_path: Path, percept: Percept, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = snapshots_module.private_frame

    def watched(frame: DisplayFrame, privacy: Any) -> DisplayFrame:
        threads.append(threading.current_thread().name)
        return real(frame, privacy)

    monkeypatch.setattr(snapshots_module, "private_frame", watched)
    snapshot(tmp_path, percept, "faces")
    assert threads == ["lookout-snapshots"]


# ------------------------------------------------------------------ the command


@pytest.mark.slow
@pytest.mark.usefixtures("remembered_detections")
def test_the_variable_sets_it_and_a_run_writes_pictures_without_camera_pixels(
    tmp_path: Path,
) -> None:
    folder, events = tmp_path / "pics", tmp_path / "events.jsonl"
    done = subprocess.run(
        [*LOOKOUT, "run", "--pace", "fast", "--source", str(data_file("vtest.avi")),
         "--model", "local", "--http", "", "--duration", "20",
         "--line", "post=0.5599,0.7292,0.5599,0.2083", "--events", str(events),
         "--snapshots", str(folder)],
        env={**offline_env(), "LOOKOUT_SNAPSHOTS_PRIVACY": "boxes"}, cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    saved = [e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "snapshot"]
    assert len(saved) >= 3
    video = cv2.VideoCapture(str(data_file("vtest.avi")))
    try:
        for event in saved:
            picture = cv2.imread(str(folder / event["file"]))
            assert picture is not None
            video.set(cv2.CAP_PROP_POS_FRAMES, event["frame"])
            ok, frame = video.read()
            assert ok
            frame = cv2.resize(frame, (picture.shape[1], picture.shape[0]))
            grey = cv2.cvtColor(picture, cv2.COLOR_BGR2GRAY).astype(np.float64).ravel()
            seen = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float64).ravel()
            # Not the camera's picture (that would be ~0.9 however much is drawn on it); a
            # little above 0: the line is drawn along the lamp post, bright in both.
            assert abs(np.corrcoef(grey, seen)[0, 1]) < 0.2, event["file"]
            plain = np.abs(picture.astype(int) - np.array(BACKGROUND)).max(axis=2) <= 4
            assert plain.mean() > 0.9, event["file"]
            assert drawn_green(picture) > 50, event["file"]
    finally:
        video.release()


@pytest.mark.parametrize(
    ("args", "environ"),
    [(["--snapshots-privacy", "blur"], {}), ([], {"LOOKOUT_SNAPSHOTS_PRIVACY": "blur"})],
)
def test_a_value_it_does_not_know_is_refused_in_one_line(
    tmp_path: Path, args: list[str], environ: dict[str, str]
) -> None:
    done = subprocess.run(
        [*LOOKOUT, "run", "--source", str(data_file("vtest.avi")), "--model", "local",
         "--http", "", "--snapshots", str(tmp_path / "pics"), *args],
        env={**offline_env(), **environ}, cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "snapshots-privacy" in line.lower().replace("_", "-") and "blur" in line
    assert "none" in line and "faces" in line and "boxes" in line
    assert not (tmp_path / "pics").exists()  # refused before anything ran
