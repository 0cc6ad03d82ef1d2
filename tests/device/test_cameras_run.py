"""Several cameras in one ``lookout run`` (issue 34), through the real CLI and detector.

Each camera has its own reader, capture loop, tracker, scene and count, one detector
serves them all, and one camera's source ending or failing leaves the others counting
and truthful; the run ends when every camera has ended.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli import LOOKOUT, offline_env
from tests.clips import write_clip
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.support import free_port

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]

POST = "0.5599,0.7292,0.5599,0.2083"


def run(tmp_path: Path, *args: str, timeout: float = 120) -> tuple[str, list[dict[str, Any]]]:
    (tmp_path / "empty.toml").write_text("")
    log = tmp_path / "events.jsonl"
    done = subprocess.run(
        [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--model", "local",
         "--no-http", "--events", str(log), *args],
        cwd=REPO_ROOT, env=offline_env(), capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    return done.stdout, events


def of(events: list[dict[str, Any]], kind: str, camera: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e.get("camera") == camera]


def test_two_cameras_count_apart_and_one_ending_early_leaves_the_other_counting(
    tmp_path: Path,
) -> None:
    short = write_clip(tmp_path / "short.avi", 4.0, start_s=10.0, mirrored=True)
    said, events = run(
        tmp_path,
        "--source", f"door={data_file('vtest.avi')}", "--source", f"hall={short}",
        "--line", f"door:post={POST}", "--pace", "fast", "--duration", "20",
    )  # fmt: skip
    # Each camera's own count, said as its own.
    assert "door: count: 3  at 0.0s of the source" in said
    assert "hall: count:" in said
    door_counts, hall_counts = of(events, "count", "door"), of(events, "count", "hall")
    assert door_counts and hall_counts
    # The short clip ended after 4 s of media; the door went on to 20 s, counting.
    hall_end = [e for e in of(events, "source_state", "hall") if e["state"] == "ended"]
    assert hall_end, of(events, "source_state", "hall")
    assert max(e["t_media"] for e in door_counts if e["count"] is not None) > 10
    assert [e["count"] for e in hall_counts][-1] is None  # unknown once it ended
    # The line is the door's alone, and counted as the hand count says for 20 s (frames
    # 0-199 of tests/data/vtest_crossings_post.json: 3 in and 4 out for sure, and a man
    # who steps just over the line and back, one more each way).
    crossings = [e for e in events if e["type"] == "crossing"]
    assert {e["camera"] for e in crossings} == {"door"}
    totals = re.search(r"door: totals: line post (\d+) in, (\d+) out", said)
    assert totals, said
    assert 3 <= int(totals[1]) <= 4 and 4 <= int(totals[2]) <= 5, totals[0]
    # Each camera's replay, said at the end, and one detector served both.
    assert "door: replayed 200 frames" in said and "hall: replayed 40 frames" in said
    stats = {e["camera"]: e for e in events if e["type"] == "capture_stats"}
    assert stats["door"]["frames_detected"] == 100  # 5 a second with its line, every one
    assert stats["hall"]["frames_detected"] == 8  # 2 a second, the device's default
    run_event = next(e for e in events if e["type"] == "run")
    assert set(run_event["cameras"]) == {"door", "hall"}


def test_a_camera_that_cannot_be_reached_is_unknown_and_the_other_counts(
    tmp_path: Path,
) -> None:
    gone = f"http://127.0.0.1:{free_port()}/stream.mjpg"  # nothing listens there
    said, events = run(
        tmp_path,
        "--source", f"door={data_file('vtest.avi')}", "--source", f"porch={gone}",
        "--pace", "fast", "--duration", "6",
    )  # fmt: skip
    porch = of(events, "source_state", "porch")
    assert porch and all(e["state"] != "running" for e in porch), porch
    assert not [e for e in of(events, "count", "porch") if e["count"] is not None]
    assert "porch: source" in said and "reconnecting" in said
    door = [e for e in of(events, "count", "door") if e["count"] is not None]
    assert door and max(e["t_media"] for e in door) > 3
