"""Readers of the page cannot cost the count (issue 33, first class).

The real ``lookout run`` in a subprocess, replaying the sample video in real time
through the real detector with the lamp-post line, while hundreds of readers in
other processes poll its status server as fast as it answers (``tests/pollers.py``):
``/metrics`` (the dearest answer), ``/api/state``, and more of them than the
server has connections. Before readers were answered in turn, a hundred pollers of
``/metrics`` left the detector 8 of its 200 due frames and the line at 0 in, 0 out.

The device must run the detector on its due frames and count the line as the hand
count does; the readers must be told, when they are not answered, when to come back;
a monitor's ``/healthz`` must keep saying the device is healthy.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.detection_cache import ENV as DETECTIONS_ENV
from tests.ops.support import free_port, health
from tests.pollers import Pollers

pytestmark = pytest.mark.slow

POST = "post=0.5599,0.7292,0.5599,0.2083"  # docs/handcount-vtest-post.md's line
MEDIA_S = 20
DUE = MEDIA_S * 5  # 5 detections a second with a line configured
# The hand count's crossings in the first 20 s (docs/handcount-vtest-post.md: out at
# frames 19, 53, 152, 173; in at 96, 108, 157; and a man who steps just over the line and
# back, out at 24 and in at 37, which the tracker may count): what the device counts with no
# reader.
HAND_IN, HAND_OUT = (3, 4), (4, 5)
START_S = 120.0  # a generous bound on a loaded machine: imports, the model, the first frame


def test_hundreds_of_tight_pollers_cost_the_count_nothing(tmp_path: Path) -> None:
    port = free_port()
    # The real detector's cost on every frame: nothing remembered from other tests.
    env = {k: v for k, v in offline_env().items() if k != DETECTIONS_ENV}
    (tmp_path / "empty.toml").write_text("")
    proc = subprocess.Popen(
        [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"),
         "--source", str(data_file("vtest.avi")), "--model", "local", "--line", POST,
         "--pace", "realtime", "--duration", str(MEDIA_S), "--http", f"127.0.0.1:{port}"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or ()), daemon=True)
    reader.start()
    deadline = time.monotonic() + START_S
    while health(port) != 200:  # counting: the first frame went through
        assert proc.poll() is None, "".join(out)
        assert time.monotonic() < deadline, "the device never said it was healthy"
        time.sleep(0.1)  # polling another process
    # More readers than connections (200): past the cap they wait or are told to retry.
    pollers = [
        Pollers(port, "/metrics", 150, processes=1).start(),
        Pollers(port, "/api/state", 150, processes=1).start(),
    ]
    probes: list[int] = []
    while proc.poll() is None:
        code = health(port)
        if proc.poll() is None and code:  # 0: the run ended between the two looks
            probes.append(code)
        time.sleep(0.5)  # a monitor's pace
    tallies = [p.stop() for p in pollers]
    reader.join(10)
    said = "".join(out)
    assert proc.returncode == 0, said[-3000:]
    ran = re.search(r"the detector ran on (\d+)", said)
    assert ran is not None, said[-3000:]
    assert int(ran.group(1)) >= 0.95 * DUE, said[-3000:]
    totals = re.search(r"totals: line post (\d+) in, (\d+) out", said)
    assert totals is not None, said[-3000:]
    entered, left = int(totals.group(1)), int(totals.group(2))
    assert HAND_IN[0] <= entered <= HAND_IN[1] and HAND_OUT[0] <= left <= HAND_OUT[1], said[-3000:]
    # Never unknown while the video ran (frames late past the watchdog would say so): only
    # its end may make the count unknown.
    assert "count: unknown" not in said, said[-3000:]
    # A monitor was told the truth: healthy, every time it asked.
    assert probes and set(probes) == {200}, probes
    for tally in tallies:
        assert tally.statuses[200] > 0, tally  # the readers were answered, in turn
        refused = tally.statuses[429] + tally.statuses[503]
        assert tally.retry_after == refused, tally  # and told when to come back
