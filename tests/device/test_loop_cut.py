"""A replay's wrap is a cut (``lookout run --loop``): nobody is followed from the last
frame back to the first, zone visits and dwell end there, and so the second pass of a
clip is counted exactly as the first was (before, tracks crossed the wrap: the second
pass of the sample video counted 12 in against the first's 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import lookout
from tests.clips import FPS
from tests.datafiles import data_file
from tests.detection_cache import remembered

pytestmark = pytest.mark.slow

SECONDS = 79.5  # the whole sample video: where the second pass counted 12 in


def test_each_pass_of_a_looped_clip_counts_as_the_first(
    tmp_path: Path, detections_folder: Path
) -> None:
    clip = data_file("vtest.avi")
    (tmp_path / "empty.toml").write_text("")
    with remembered(detections_folder):
        ran = lookout(
            "run", "--source", str(clip), "--loop", "--duration", str(2 * SECONDS),
            "--pace", "fast", "--no-http", "--model", "local",
            "--line", "post=0.5599,0.7292,0.5599,0.2083",
            "--zone", "left=0.05,0.2,0.45,0.2,0.45,0.95,0.05,0.95", "--dwell", "3",
            "--events", str(tmp_path / "e.jsonl"), "--config", str(tmp_path / "empty.toml"),
            timeout=180,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    length = SECONDS - 1e-6  # each pass is the clip's frames, 1/FPS apart

    def of_pass(kind: str, n: int) -> list[tuple[float, str]]:
        start = n * SECONDS
        return [
            (round(e["t_media"] - start, 2), str(e.get("direction") or e.get("zone")))
            for e in events
            if e["type"] == kind and start <= e["t_media"] < start + length + 1 / FPS / 2
        ]

    first = of_pass("crossing", 0)
    assert first, "the clip should have people crossing the line"
    second = of_pass("crossing", 1)
    # The same crossings, each dated where its path met the line: interpolated, so a time
    # 79.5 s further on may round to the next hundredth.
    assert [d for _, d in second] == [d for _, d in first]
    assert all(abs(a - b) <= 0.011 for (a, _), (b, _) in zip(second, first, strict=True))
    # Visits and dwell start afresh at the wrap: the second pass's first stays are the
    # first pass's (later, times 79.5 s further on round differently in the tracker's
    # sums, and a dwell may differ by one).
    assert of_pass("dwell", 1)[:1] == of_pass("dwell", 0)[:1]
    assert abs(len(of_pass("dwell", 1)) - len(of_pass("dwell", 0))) <= 1
