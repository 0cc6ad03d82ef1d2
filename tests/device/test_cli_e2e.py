"""End to end: the real `lookout` command on the real video with the real detector."""

from __future__ import annotations

import itertools
import json
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from device.app.wiring import build_app
from device.config import build
from device.sources import SourceError
from device.vision.frame import Frame
from live.store.eventlog import read_events
from tests.cli import LOOKOUT, lookout, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.detection_cache import remembered

pytestmark = pytest.mark.slow


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def fast_run(
    tmp_path_factory: pytest.TempPathFactory, detections_folder: Path
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("run") / "events.jsonl"
    video = data_file("vtest.avi")
    with remembered(detections_folder):
        result = lookout(
            "run", "--source", str(video), "--pace", "fast", "--model", "local",
            "--no-http", "--events", str(out),
        )  # fmt: skip
    return result, out


def test_fast_replay_exits_cleanly_and_reports_every_change(
    fast_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, out = fast_run
    assert result.returncode == 0, result.stderr
    events = read_jsonl(out)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls and calls[0]["name"] == "count_people"
    count_events = [e for e in events if e["type"] == "count"]
    # When the file ends the count is no longer live: said as unknown, with why.
    ended = count_events.pop()
    assert ended["count"] is None and ended["previous"] is not None
    assert ended["reason"].startswith("source ended at ") and "end of file" in ended["reason"]
    counts = [e["count"] for e in count_events]
    assert len(counts) >= 5 and None not in counts
    assert all(a != b for a, b in itertools.pairwise(counts))
    emissions = [
        e["payload"]["people"]
        for e in events
        if e["type"] == "emission" and "people" in e["payload"]
    ]
    assert emissions in (counts, [*counts, None])  # the end may come after the stream's
    # Every change was also said by the (local) model.
    texts = [e["text"] for e in events if e["type"] == "model_text"]
    assert len([t for t in texts if "in view" in t]) == len(counts)
    assert events[-1]["type"] == "capture_stats" and events[-1]["frames_read"] == 795
    assert all(isinstance(e["t"], float | int) for e in events)
    assert "count: " in result.stdout


@pytest.mark.usefixtures("remembered_detections")
def test_counts_match_the_detector_run_offline(
    fast_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, out = fast_run
    counted = lookout("count", str(data_file("vtest.avi")), "--every", "5", "--json")
    assert counted.returncode == 0, counted.stderr
    frames = [json.loads(line) for line in counted.stdout.splitlines()]
    assert len(frames) == 159 and frames[1]["frame"] == 5
    assert {"frame", "t", "raw", "count", "boxes"} <= set(frames[0])
    assert all(len(box) == 5 for f in frames for box in f["boxes"])
    offline = []
    for f in frames:
        if not offline or offline[-1][1] != f["count"]:
            offline.append((f["t"], f["count"]))
    events = read_jsonl(out)
    live = [
        (e["t_media"], e["count"])
        for e in events
        if e["type"] == "count" and e["count"] is not None
    ]
    assert live == offline


def test_bad_source_and_bad_flags_exit_2_with_one_line(tmp_path: Path) -> None:
    for args in (
        ["run", "--source", str(tmp_path / "missing.avi")],
        ["run", "--fps", "0"],
        ["run", "--pace", "slow"],
        ["run", "--model", "gemini-3.8-live"],  # no API key in the environment
        ["run", "--config", str(tmp_path / "nope.toml")],
        ["count", str(tmp_path / "missing.avi")],
    ):
        result = lookout(*args, timeout=60)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lookout: "), (args, result.stderr)
        assert "Traceback" not in result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refusing_camera_url_reconnects_and_the_session_survives(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    url = f"rtsp://127.0.0.1:{free_port()}/stream"
    result = lookout(
        "run", "--source", url, "--model", "local", "--no-http", "--duration", "4",
        "--events", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = read_jsonl(out)
    states = [e["state"] for e in events if e["type"] == "source_state"]
    # Said once (then at the 10th, 100th... attempt: the probing every 2 s is
    # tests/device/test_sources.py's), and never given up on.
    assert states.count("reconnecting") == 1
    assert "failed" not in states
    assert [e["type"] for e in events if e["type"] == "stream_stopped"]
    assert [e for e in events if e["type"] == "tool_call"]


def test_sigterm_stops_within_two_seconds_with_a_complete_log(tmp_path: Path) -> None:
    out, db = tmp_path / "events.jsonl", tmp_path / "events.sqlite"
    env = offline_env()
    proc = subprocess.Popen(
        [*LOOKOUT, "run", "--source", str(data_file("vtest.avi")), "--model", "local",
         "--no-http", "--events", str(out), "--db", str(db)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # An external process: wait (with a deadline) until it has reported a count.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and '"type":"count"' in out.read_text():
                break
            if proc.poll() is not None:
                pytest.fail(f"lookout exited early: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        else:
            pytest.fail("no count event within 60 s")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    events = read_jsonl(out)
    stopped = [e for e in events if e["type"] == "stream_stopped"]
    assert stopped and stopped[0]["reason"] == "session closed"
    jsonl_emissions = [(e["id"], e["seq"], e["payload"]) for e in events if e["type"] == "emission"]
    db_emissions = [(e["id"], e["seq"], e["payload"]) for e in read_events(db, kind="emission")]
    assert jsonl_emissions and db_emissions == jsonl_emissions
    assert [e["type"] for e in read_events(db, kind="stream_stopped")] == ["stream_stopped"]


class FlakyFile:
    """A file source whose reads fail twice in the middle of the clip."""

    name = "flaky.avi"
    is_camera = False
    fps = 10.0
    frame_count = 60

    def __init__(self) -> None:
        self.position = 0
        self.failures_left = 2
        self.opened = 0

    def open(self) -> None:
        self.opened += 1

    def read(self) -> Frame | None:
        if self.position >= self.frame_count:
            return None
        if self.position == 30 and self.failures_left:
            self.failures_left -= 1
            raise SourceError("read failed: disk hiccup")
        index = self.position
        self.position += 1
        image = np.full((240, 320, 3), 90, dtype=np.uint8)
        return Frame(image, t_media=index / self.fps, index=index)

    def seek(self, index: int) -> None:
        self.position = index

    def close(self) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.usefixtures("remembered_detections")
async def test_a_file_source_that_raises_mid_run_reconnects_and_loses_no_frame(
    tmp_path: Path,
) -> None:
    import io

    out = tmp_path / "events.jsonl"
    config = build(
        # The gate off: its frames are all alike, and every one must reach the detector.
        {"model": "local", "pace": "fast", "http": "", "events": out, "detect_fps": 10.0,
         "motion": "off"},
        environ={},
        system_config=Path("/nonexistent"),
    )  # fmt: skip
    source = FlakyFile()
    app = build_app(config, operations=False, out=io.StringIO(), source=source)
    app.source_runner.initial_backoff_s = 0.01
    assert await app.run() == 0
    events = read_jsonl(out)
    states = [e["state"] for e in events if e["type"] == "source_state"]
    assert "reconnecting" in states and states[-1] == "ended"
    assert app.capture.stats.frames_read == 60  # resumed at the next frame: none lost or repeated
    assert app.perception.stats.detected == 60
    assert source.opened >= 2


def test_doctor_reports_a_healthy_setup() -> None:
    result = lookout("doctor", "--source", str(data_file("vtest.avi")), timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[  ok] source" in result.stdout and "768x576" in result.stdout
    assert "[  ok] detector" in result.stdout
    # No problem; "all good" only where nothing warned (here: no Gemini key is a warning).
    last = result.stdout.strip().splitlines()[-1]
    warned = sum(line.startswith("[warn]") for line in result.stdout.splitlines())
    assert last == (
        "all good" if not warned else f"no problem found; {warned} warning(s) above ([warn])"
    )


def test_doctor_reports_what_is_wrong(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    result = lookout("doctor", "--source", str(tmp_path / "nope.avi"), "--detector", str(broken),
                     "--model", "gemini-3.8-live", timeout=60)  # fmt: skip
    assert result.returncode == 1
    assert "[FAIL] source" in result.stdout and "[FAIL] detector" in result.stdout
    assert "[FAIL] model" in result.stdout and "GEMINI_API_KEY" in result.stdout
    assert "3 problem(s) found" in result.stdout


def test_doctor_tries_a_gemini_setup_handshake_and_says_what_it_got() -> None:
    from tests.fakelive.server import FakeLiveServer

    args = ("doctor", "--source", str(data_file("vtest.avi")), "--model", "gemini-3.8-live")
    with FakeLiveServer.run_in_thread() as server:
        env = server.subprocess_env()
        accepted = subprocess.run([*LOOKOUT, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                                  text=True, timeout=60, check=False)  # fmt: skip
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        assert "[  ok] model" in accepted.stdout and "setup accepted" in accepted.stdout
        assert len(server.connections()) == 1  # it really connected
        # The service refuses the setup (a bad key, a model it does not serve).
        server.set_options(setup_close_code=1008)
        refused = subprocess.run([*LOOKOUT, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                                 text=True, timeout=60, check=False)  # fmt: skip
        # Nothing listens: unreachable, said as such.
        env["GOOGLE_GEMINI_BASE_URL"] = f"https://127.0.0.1:{free_port()}"
        gone = subprocess.run([*LOOKOUT, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
    assert refused.returncode == 1
    line = next(x for x in refused.stdout.splitlines() if "model" in x and "FAIL" in x)
    assert "refused" in line and "1008" in line, refused.stdout
    assert "all good" not in refused.stdout and "Traceback" not in refused.stderr
    assert gone.returncode == 1
    assert "[FAIL] model" in gone.stdout and "unreachable" in gone.stdout, gone.stdout
    assert env["GEMINI_API_KEY"] not in gone.stdout + gone.stderr


def _start_counting(args: list[str], out: Path) -> subprocess.Popen[str]:
    """``lookout run ARGS`` on the sample video, once it has said a count in ``out``."""
    proc = subprocess.Popen(
        [*LOOKOUT, "run", "--source", str(data_file("vtest.avi")), "--model", "local",
         "--no-http", "--events", str(out), *args],
        cwd=REPO_ROOT, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (out.exists() and '"type":"count"' in out.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"lookout did not count: {proc.communicate()[1]}")
        time.sleep(0.05)  # polling another process
    return proc


def test_sighup_does_not_kill_the_device_it_checks_the_logs(tmp_path: Path) -> None:
    """logrotate's postrotate (or a hung-up terminal) sends SIGHUP: by default it ended
    the process on the spot, with no offline state and the logs cut mid-run."""
    out = tmp_path / "events.jsonl"
    proc = _start_counting([], out)
    try:
        proc.send_signal(signal.SIGHUP)
        lines = len(out.read_text().splitlines())
        deadline = time.monotonic() + 30
        while len(out.read_text().splitlines()) <= lines + 3:  # it goes on logging
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert "SIGHUP: the event logs are checked" in stdout


def test_sigterm_with_the_database_locked_still_stops_within_two_seconds(
    tmp_path: Path,
) -> None:
    """Another process holds the --db's lock: SIGTERM must not wait for it (it took 6.8 s)
    and what could not be written is said, with exit 3, not lost silently."""
    import sqlite3

    out, db = tmp_path / "events.jsonl", tmp_path / "events.sqlite"
    proc = _start_counting(["--db", str(db)], out)
    # The device may be writing at this moment (a busy CPU makes its transactions longer):
    # the lock is waited for, as another process would, instead of failing at once.
    holder = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        time.sleep(0.5)  # events pile up behind the lock (another process: no event to wait on)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=10)
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The device's own deadline is 2 s (its clock); what must be told apart is waiting out the
    # lock (its busy timeout is 5 s; it took 6.8 s). The rest is for a loaded machine's exit.
    assert took < 4.5, took
    assert proc.returncode == 3, (stdout, stderr)
    assert "the event log is incomplete" in stderr and str(db) in stderr
