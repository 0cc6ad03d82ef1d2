"""The console says each thing once: a change is not repeated by the offline model, a
device start is not said twice, and a run ends with its lines' and zones' totals."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.datafiles import REPO_ROOT, data_file

pytestmark = pytest.mark.slow

LINE = "post=0.5599,0.7292,0.5599,0.2083"
ZONE = "left=0,0,0.4,0,0.4,1,0,1"


def run(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "device.cli",
            "run",
            "--no-http",
            "--model",
            "local",
            "--source",
            str(data_file("vtest.avi")),
            *args,
        ],
        cwd=REPO_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def lines_of(out: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in out.splitlines() if "] " in line]


@pytest.mark.usefixtures("remembered_detections")
def test_a_change_is_said_once_and_the_run_ends_with_its_totals() -> None:
    said = lines_of(run("--pace", "fast", "--duration", "20", "--line", LINE,
                        "--zone", ZONE, "--dwell", "3"))  # fmt: skip
    changes = [s for s in said if s.startswith("count: ") and "(was" in s]
    crossings = [s for s in said if s.startswith("line post: person")]
    assert changes and crossings
    # The offline model's sentences restate these: the console does not print them again.
    assert not [s for s in said if re.match(r"model: (\d+ people|1 person) in view", s)]
    assert not [s for s in said if s.startswith("model: Line post")]
    (totals,) = [s for s in said if s.startswith("totals: ")]
    last = re.search(r"\((\d+) in, (\d+) out\)", crossings[-1])
    assert last is not None
    assert f"line post {last[1]} in, {last[2]} out" in totals
    dwells = len([s for s in said if s.startswith("zone left: person")])
    stayed = f"{dwells} person" if dwells == 1 else f"{dwells} people"
    assert f"zone left {stayed} stayed over 3 s" in totals


def test_a_start_from_the_console_is_said_once() -> None:
    said = lines_of(run("--pace", "realtime", "--duration", "30", "--stdin",
                        stdin="stop\nstart\nquit\n"))  # fmt: skip
    assert len([s for s in said if s.startswith("count_people started by the device")]) == 1


def test_the_outputs_news_reads_like_every_console_line() -> None:
    # The status page's address and the broker being away: timed lines like the rest, not
    # bare ones (nor a log record's format).
    port = closed_port()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "device.cli",
            "run",
            "--model",
            "local",
            "--duration",
            "2",
            "--source",
            str(data_file("vtest.avi")),
            "--http",
            "127.0.0.1:0",
            "--mqtt",
            f"mqtt://127.0.0.1:{port}",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr  # the events MQTT never got: said, exit 3
    timed = re.compile(r"^\[\s*\d+\.\ds\] ")
    news = [line for line in done.stdout.splitlines() if "status page:" in line or "MQTT" in line]
    assert any("status page:" in line for line in news)
    assert any("MQTT broker" in line for line in news)
    assert all(timed.match(line) for line in news), news
    assert "lookout.mqtt" not in done.stderr


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
