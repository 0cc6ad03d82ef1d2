"""One perception step: `lookout count`, `lookout run` and `lookout ask` count a recording's
frames the same way, because they perceive through the same code on the same frames.

Each command runs for real, in its own process, on one clip (the first 15 s of the sample
video, with people arriving): count prints each frame it looked at, run's event log says
each change with its frame, and an ask report with one-frame periods (--period 0.5 at the
default 2 detections a second) stores each frame's count in its --db. All three must agree
frame by frame, and ask's "how many now" must be the count of the clip's first frame.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli import lookout
from tests.clips import write_clip

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]

SECONDS = 15


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_clip(tmp_path_factory.mktemp("clip") / "clip.avi", SECONDS)


def count_records(clip: Path) -> dict[int, int]:
    done = lookout("count", str(clip), "--json")
    assert done.returncode == 0, done.stderr
    return {r["frame"]: r["count"] for r in map(json.loads, done.stdout.splitlines())}


def run_counts(clip: Path, tmp_path: Path) -> tuple[list[int], list[int]]:
    """The frames at which run's count changed, and the count from each."""
    events = tmp_path / "run.jsonl"
    done = lookout(
        "run", "--source", str(clip), "--pace", "fast", "--no-http", "--model", "local",
        "--events", str(events),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    frames, counts = [], []
    for event in map(json.loads, events.read_text().splitlines()):
        if event["type"] == "count" and event["count"] is not None:
            frames.append(event["frame"])
            counts.append(event["count"])
    return frames, counts


def ask_report(clip: Path, tmp_path: Path) -> dict[int, int]:
    """Frame -> count from an ask report whose periods are one frame each."""
    db = tmp_path / "ask.sqlite"
    done = lookout(
        "ask", f"report for {SECONDS / 60:g} minutes", "--source", str(clip), "--pace", "fast",
        "--model", "local", "--db", str(db), "--period", "0.5",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT start_s, samples, min, max FROM occupancy_periods").fetchall()
    assert rows
    per_frame = {}
    for start_s, samples, low, high in rows:
        assert samples == 1 and low == high  # one frame per period
        per_frame[round(start_s * 10)] = low
    return per_frame


def test_count_run_and_ask_report_the_same_counts_for_the_same_frames(
    clip: Path, tmp_path: Path
) -> None:
    counted = count_records(clip)
    assert sorted(counted) == list(range(0, SECONDS * 10, 5))  # run's 2 detections a second
    changed_at, run_counts_ = run_counts(clip, tmp_path)
    assert len(changed_at) >= 3  # people arrive in the clip: the count changes

    def run_at(frame: int) -> int:
        return run_counts_[bisect.bisect_right(changed_at, frame) - 1]

    assert {f: run_at(f) for f in counted} == counted
    reported = ask_report(clip, tmp_path)
    assert reported == counted
    # "How many now" on a recording is its first frame, counted as run counts it.
    done = lookout(
        "ask", "how many people are there?", "--source", str(clip), "--pace", "fast",
        "--model", "local",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # The tool's answer as stderr shows it ("<- count_people_now {...}").
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("<- count_people_now ")]
    answer = json.loads(line.removeprefix("<- count_people_now "))
    assert answer["frame"] == 0 and answer["people"] == counted[0]
