"""SIGTERM ends ``lookout run`` within 2 s (the README's promise to systemd and Docker).

A timed assertion on purpose: the promise is a time. Measured from the signal to the
process's exit, with the page and an event log on, as a device runs.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, offline_env
from tests.datafiles import REPO_ROOT, data_file


def test_sigterm_ends_a_realtime_run_within_two_seconds(tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_text("")
    out = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--source",
         str(data_file("vtest.avi")), "--pace", "realtime", "--model", "local",
         "--http", "127.0.0.1:0", "--events", str(out)],
        cwd=REPO_ROOT, env=offline_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # an external process: polled, with a deadline
        while '"type":"count"' not in (out.read_text() if out.exists() else ""):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"no count before exit or 60 s: {proc.communicate()[1]}")
            time.sleep(0.05)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert took < 2.0, f"SIGTERM took {took:.2f} s"
