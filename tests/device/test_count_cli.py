"""``lookout count``: a folder of photos is photos, each counted and named on its own."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
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


def test_images_over_the_pixel_limit_are_downscaled_or_refused_not_decoded_whole(
    tmp_path: Path,
) -> None:
    import resource

    from device.sources import open_source
    from device.sources.base import UnreadableFrame

    folder = tmp_path / "big"
    folder.mkdir()
    # 10000 x 10000: 300 MB decoded. Flat colour, so the files themselves are small; made
    # in another process, so that this one's peak memory says what decoding them costs.
    make = (
        "import cv2, numpy as np, sys; huge = np.full((10_000, 10_000, 3), 90, np.uint8); "
        "cv2.imwrite(sys.argv[1], huge); cv2.imwrite(sys.argv[2], huge)"
    )
    subprocess.run(
        [sys.executable, "-c", make, str(folder / "a_huge.png"), str(folder / "b_huge.jpg")],
        check=True, timeout=120,
    )  # fmt: skip
    cv2.imwrite(str(folder / "c_small.jpg"), vtest_frame(10))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    source = open_source(str(folder), clock_now=lambda: 0.0, max_image_pixels=20_000_000)
    with pytest.raises(UnreadableFrame, match=r"10000x10000 is 100 megapixels, over the limit"):
        source.read()
    jpeg = source.read()
    assert jpeg is not None and jpeg.image.shape[:2] == (2500, 2500)  # decoded at 1/4
    small = source.read()
    assert small is not None and small.image.shape[:2] == (576, 768)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 150, grown_mb  # never the 300 MB of a whole decode

    counted = lookout("count", str(folder), timeout=120)
    assert counted.returncode == 1 and "a_huge.png not decoded" in counted.stderr
    assert "b_huge.jpg: 0 people" in counted.stdout and "c_small.jpg" in counted.stdout


@pytest.mark.usefixtures("remembered_detections")
def test_frames_too_far_apart_to_track_are_counted_each_on_its_own_and_that_is_said() -> None:
    video = str(data_file("vtest.avi"))
    sparse = lookout("count", video, "--every", "200", "--json", timeout=120)
    assert sparse.returncode == 0, sparse.stderr
    frames = [json.loads(line) for line in sparse.stdout.splitlines()]
    assert [f["frame"] for f in frames] == [0, 200, 400, 600]
    # 20 s apart nobody is seen twice: a tracked count would say 0 with people in view.
    assert all(f["count"] == f["raw"] for f in frames) and min(f["raw"] for f in frames) >= 3
    assert sparse.stderr.strip().splitlines() == [
        "lookout: frames 20 s apart are too far apart to track people from one to the next "
        "(at most 2 s): each is counted on its own"
    ]
    dense = lookout("count", video, "--every", "10", "--json", timeout=120)
    assert dense.returncode == 0 and dense.stderr == ""
    tracked = [json.loads(line) for line in dense.stdout.splitlines()]
    assert any(f["count"] != f["raw"] for f in tracked)  # 1 s apart: tracked


def test_lookout_run_on_a_folder_of_photos_counts_each_photo_as_count_does(
    tmp_path: Path,
) -> None:
    """Unrelated photos are not a scene: a photo with many people right after one with few
    is said at once, as lookout count says it, not held back or smoothed away."""
    folder = tmp_path / "photos"
    folder.mkdir()
    for name, index in (("a.jpg", 0), ("b.jpg", 420), ("c.jpg", 150), ("d.jpg", 420)):
        cv2.imwrite(str(folder / name), vtest_frame(index))
    counted = lookout("count", str(folder), "--json")
    assert counted.returncode == 0, counted.stderr
    per_photo = [json.loads(line)["count"] for line in counted.stdout.splitlines()]
    assert len(per_photo) == 4 and per_photo[0] != per_photo[1] != per_photo[2]

    events = tmp_path / "events.jsonl"
    ran = lookout(
        "run", "--source", str(folder), "--pace", "fast", "--no-http", "--model", "local",
        "--events", str(events),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    said = [e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "count"]
    # Each photo's count, in order, the moment it is shown (a repeat is no change).
    changes = [per_photo[0]] + [b for a, b in itertools.pairwise(per_photo) if b != a]
    assert [e["count"] for e in said if e["count"] is not None] == changes
    assert [e["frame"] for e in said if e["count"] is not None][:3] == [0, 1, 2]

    # Lines need people followed from photo to photo: refused, unless it is a time-lapse.
    refused = lookout("run", "--source", str(folder), "--line", "door=0.5,0,0.5,1", "--no-http")
    assert refused.returncode == 2 and "--timelapse" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    lapse = lookout(
        "count", str(folder), "--timelapse", "--folder-fps", "10", "--detect-fps", "10", "--json"
    )
    assert lapse.returncode == 0, lapse.stderr
    records = [json.loads(line) for line in lapse.stdout.splitlines()]
    # Frames of one scene: followed, so someone missed in one image still counts.
    assert len(records) == 4 and any(r["count"] != r["raw"] for r in records)


def test_an_image_whose_size_cannot_be_read_first_is_not_decoded_and_that_is_said(
    tmp_path: Path,
) -> None:
    """OpenCV decodes by content, whatever the name: a Radiance HDR named .png slipped past
    the size check (Pillow does not know HDR) and was decoded whole. Now it is refused, and
    every image left out is said, by count and by run alike (run printed nothing)."""
    folder = tmp_path / "photos"
    folder.mkdir()
    hdr = np.random.default_rng(1).random((1200, 1000, 3)).astype(np.float32)  # 1.2 MP
    assert cv2.imwrite(str(tmp_path / "x.hdr"), hdr)
    shutil.copy(tmp_path / "x.hdr", folder / "a_radiance.png")
    cv2.imwrite(str(folder / "b_big.png"), np.full((1500, 1000, 3), 90, np.uint8))  # 1.5 MP
    cv2.imwrite(str(folder / "c_people.jpg"), vtest_frame(0))
    limit = ["--max-image-pixels", "1000000"]

    counted = lookout("count", str(folder), *limit)
    assert counted.returncode == 1 and counted.stdout.startswith("c_people.jpg: ")
    said = counted.stderr
    assert "a_radiance.png" in said and "size cannot be read before decoding" in said
    assert "b_big.png" in said and "over the limit" in said

    events = tmp_path / "events.jsonl"
    ran = lookout(
        "run", "--source", str(folder), "--pace", "fast", "--no-http", "--model", "local",
        "--events", str(events), *limit,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    for name in ("a_radiance.png", "b_big.png"):
        assert any(name in line and "skipped" in line for line in ran.stdout.splitlines())
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    errors = [e["message"] for e in logged if e["type"] == "error"]
    assert len(errors) == 2 and all("skipped" in m for m in errors)


def test_a_folder_says_what_it_left_out_and_ends_with_a_tally(tmp_path: Path) -> None:
    shutil.copy(data_file("messi5.jpg"), tmp_path / "messi5.jpg")
    (tmp_path / "clip.avi").write_bytes(data_file("vtest.avi").read_bytes()[:4096])
    done = lookout("count", str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("messi5.jpg: ")
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(
        f"lookout: left out 1 file(s) of {tmp_path} that are not images: clip.avi"
    )
    assert lines[-1] == f"lookout: counted 1 of 1 image(s) of {tmp_path}; 1 file(s) left out"
