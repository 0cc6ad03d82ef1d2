"""A one-camera configuration from before several cameras (issue 34) starts unchanged.

The configuration is written in the layout of 65ac779, the last commit before cameras
(``[source]``, ``[perception]``, top-level ``[lines.NAME]`` and ``[zones.NAME]``), and
run through the real CLI and detector on the sample video. What the console says is
what 65ac779 said for the same file, line for line (``BEFORE`` is that run's output,
its wall times taken out, with what changed since for reasons that are not the
configuration's: issue 36's crossings dated where the path met the line, and its tracker
matching tightly first); the events carry the camera ``main``, nothing else changes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("remembered_detections")]

# ``lookout run --config old.toml --model local --no-http --pace fast --duration 20`` at
# 65ac779 (DATA: the sample video's folder; X: the replay's wall time), with two changes
# of issue 36 that are not about the configuration. Each crossing is dated where the path
# met the line (65ac779 dated it at the frame that made it sure, up to 2.5 s later). The
# tracker matches tightly first: the men at the post get other ids (1 and 2 swapped after
# 2.4 s), the woman walking left behind the post is counted at 15.3 s (65ac779's tracker
# gave her track to a man stepping out from behind it: hand count, frame 152), and with
# her the count's changes at 15.0, 15.2, 19.2 and 19.8 s and two more emissions.
BEFORE = [
    "model: connecting to local…",
    "model: connected (local)",
    "count_people started (call local-call-1)",
    "watch_line started (call local-call-2)",
    "source DATA/vtest.avi opening",
    "watch_zone started (call local-call-3)",
    "source DATA/vtest.avi running: 768x576 frames",
    "count: 3  at 0.0s of the source",
    "zone kiosk: 1  at 0.0s of the source",
    "zone kiosk: 0  at 0.6s of the source",
    "count: 4 (was 3)  at 1.2s of the source",
    "count: 5 (was 4)  at 1.8s of the source",
    "line post: person 2 out (0 in, 1 out)  at 1.9s of the source",
    "line post: person 1 out (0 in, 2 out)  at 2.4s of the source",
    "line post: person 2 in (1 in, 2 out)  at 3.4s of the source",
    "count: 6 (was 5)  at 4.2s of the source",
    "line post: person 2 out (1 in, 3 out)  at 5.4s of the source",
    "count: 7 (was 6)  at 8.6s of the source",
    "count: 6 (was 7)  at 9.8s of the source",
    "count: 7 (was 6)  at 10.8s of the source",
    "line post: person 1 in (2 in, 3 out)  at 9.2s of the source",
    "count: 8 (was 7)  at 11.8s of the source",
    "count: 7 (was 8)  at 12.0s of the source",
    "count: 8 (was 7)  at 13.4s of the source",
    "count: 7 (was 8)  at 15.0s of the source",
    "count: 8 (was 7)  at 15.2s of the source",
    "line post: person 8 out (2 in, 4 out)  at 15.3s of the source",
    "line post: person 2 in (3 in, 4 out)  at 15.6s of the source",
    "line post: person 9 out (3 in, 5 out)  at 17.4s of the source",
    "count: 7 (was 8)  at 18.8s of the source",
    "count: 6 (was 7)  at 19.2s of the source",
    "count: 7 (was 6)  at 19.8s of the source",
    "count_people stopped: session closed (15 emissions)",
    "watch_line stopped: session closed (9 emissions)",
    "watch_zone stopped: session closed (2 emissions)",
    "source DATA/vtest.avi ended: closed — count, 1 zone unknown; 1 line not counting",
    "totals: line post 3 in, 5 out; zone kiosk 0 people stayed over 5 s",
    # 65ac779 said 19.8 s (where the last frame looked at began); 200 frames of a 10 fps
    # file are 20.0 s of media, which is what --duration 20 asked for (issue 35).
    "replayed 200 frames (20.0 of 79.5 s of media) from DATA/vtest.avi in X s; the detector ran on 100",  # noqa: E501
]
# Lines said by concurrent tasks at start (the tools starting, the source opening) come
# in either order; the rest is in the order perception made it.
STARTING = 6


def test_a_one_camera_config_from_before_cameras_says_what_it_said(tmp_path: Path) -> None:
    video = data_file("vtest.avi")
    config = tmp_path / "old.toml"
    config.write_text(
        f"""[source]
source = "{video}"

[perception]
detect_fps = 5

[lines.post]
points = [[0.5599, 0.7292], [0.5599, 0.2083]]

[zones.kiosk]
points = [[0.1, 0.5], [0.4, 0.5], [0.4, 0.95], [0.1, 0.95]]
dwell = 5

[outputs]
events = "{tmp_path / "events.jsonl"}"
"""
    )
    done = subprocess.run(
        [*LOOKOUT, "run", "--config", str(config), "--model", "local", "--no-http",
         "--pace", "fast", "--duration", "20",
         # What was recorded then ran on onnxruntime fp32: a bf16 backend may number
         # people differently (tests/models/test_backends.py holds it to its own rule).
         "--backend", "onnxruntime", "--precision", "fp32"],
        cwd=REPO_ROOT, env=offline_env(), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = [
        re.sub(r"in [0-9.]+ s;", "in X s;", re.sub(r"^\[ *[0-9.]+s\] ", "", line)).replace(
            f"{video.parent}/", "DATA/"
        )
        for line in done.stdout.splitlines()
    ]
    # Since issue 36 the run says first how the detector runs on this machine, and why.
    assert said[0].startswith("detector: "), said[0]
    said = said[1:]
    assert sorted(said[:STARTING]) == sorted(BEFORE[:STARTING])
    assert said[STARTING:] == BEFORE[STARTING:]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    cameras = {e["camera"] for e in events if "camera" in e}
    assert cameras == {"main"}
    assert not any(line.startswith("main:") for line in said)
