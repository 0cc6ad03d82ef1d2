"""A real ``lookout run`` (and ``lookout ask``) process against a hostile model endpoint.

The fake Live server (TLS, the real SDK) answers each setup and then sends what it should
not: a frame that is not an object, 200 KB of nesting, invalid UTF-8, the wrong shape,
awkward text, or a GoAway at once. The device must count on, the process must not exit
(under systemd's start limit an exiting process ends as a failed service), reconnects must
back off, and the console must say the run of failures once, not once per attempt.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import (
    FakeGenerateServer,
    FakeHttpError,
    FakeLiveServer,
    ThreadedFakeGenerateServer,
    ThreadedFakeLiveServer,
)
from tests.fakelive.hostile import AWKWARD_TEXT, UNREADABLE
from tests.ops.support import wait_until

pytestmark = pytest.mark.slow

MODEL = "gemini-3.8-live"
# A console line about the model connection (not the model's own text: "model: <text>").
CONNECTION_LINE = re.compile(
    r"model: (connecting|reconnecting|connected|connection lost|gave up|\S+ unreachable|"
    r"\S+ refused)"
)


@pytest.fixture
def live() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def run(server: ThreadedFakeLiveServer, events: Path, *args: str) -> subprocess.Popen[str]:
    # Output goes to files: a pipe nobody reads until the end fills up (64 KB) and
    # blocks the process on its next console line.
    out = events.with_name("stdout.txt").open("w")
    err = events.with_name("stderr.txt").open("w")
    with out, err:
        return subprocess.Popen(
            [sys.executable, "-m", "device.cli", "run", "--model", MODEL, "--no-http",
             "--source", str(data_file("vtest.avi")), "--events", str(events), *args],
            cwd=REPO_ROOT, env=server.subprocess_env(), stdout=out, stderr=err, text=True,
        )  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def counts(path: Path) -> int:
    return sum(1 for e in read_jsonl(path) if e["type"] == "count")


def stop(proc: subprocess.Popen[str], events: Path) -> tuple[int, str, str]:
    """As systemd stops it: SIGTERM; then the exit code, stdout and stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = events.with_name("stdout.txt").read_text(encoding="utf-8", errors="replace")
    err = events.with_name("stderr.txt").read_text(encoding="utf-8", errors="replace")
    return proc.returncode, out, err


# Connection n (0-based) is answered, then sent awkward text and bad frame n; from the
# last one on the model behaves.
BAD = ["binary JSON string", "nested arrays (200 KB)", "invalid UTF-8", "serverContent a string"]
AWKWARD = list(AWKWARD_TEXT.values())


def hostile(conn: Any) -> list[Any]:
    if conn.index >= len(BAD):
        return []
    return [AWKWARD[conn.index % len(AWKWARD)], UNREADABLE[BAD[conn.index]]]


def test_a_hostile_endpoint_never_stops_the_device(
    live: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    live.set_options(after_setup=hostile)
    proc = run(live, events, "--db", str(tmp_path / "events.db"))
    try:
        # Every bad frame ended its connection; the process came back for the next.
        for n in range(len(BAD)):
            live.wait_closed(connection=n, timeout=60)
        good = live.wait_connection(len(BAD) + 1, timeout=60)
        assert proc.poll() is None, "the process ended"
        # The device counted on through it all, and counts on now.
        before = counts(events)
        wait_until(lambda: counts(events) > before, 30, "a count change after the bad frames")
        # The model on the good connection works: it calls count_people and hears counts.
        (call_id,) = live.send_tool_call({"name": "count_people", "args": {}})
        live.wait_function_response(call_id, count=2, timeout=30)
        assert proc.poll() is None
    finally:
        code, out, err = stop(proc, events)
    assert code == 0, err
    assert "Traceback" not in err, err
    assert good.index == len(BAD)
    # Each bad frame is in the console as a problem of the connection, once for the run.
    said = [line for line in out.splitlines() if CONNECTION_LINE.search(line)]
    assert len(said) <= 4, said
    assert any("could not be read" in line for line in said), said
    # Every event went to the log whole (the awkward text too).
    logged = read_jsonl(events)
    assert any(e["type"] == "model_text" for e in logged)


def test_go_away_after_every_setup_backs_off_and_is_said_once(
    live: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    """The finding: 704 reconnects in 40 s, 2,850 event-log and 2,114 console lines."""
    events = tmp_path / "events.jsonl"
    live.set_options(after_setup=[{"goAway": {"timeLeft": "0s"}}])
    proc = run(live, events)
    try:
        live.wait_connection(1, timeout=60)
        first = live.connections()[0].opened_at
        # The window is the measurement: with waits of 0.5, 1, 2, 4 and 8 s after the
        # failures, 12 s hold the first connection and at most five more.
        wait_until(lambda: time.monotonic() - first > 12, 20, "the window")
        opened = [c.opened_at - first for c in live.connections()]
        assert proc.poll() is None, "the process ended"
        before = counts(events)
        wait_until(lambda: counts(events) > before, 30, "a count change while it flaps")
    finally:
        code, out, err = stop(proc, events)
    assert code == 0, err
    within = [t for t in opened if t <= 12]
    assert 3 <= len(within) <= 6, opened
    gaps = [b - a for a, b in itertools.pairwise(within)]
    assert all(later >= earlier * 1.5 for earlier, later in itertools.pairwise(gaps)), gaps
    said = [line for line in out.splitlines() if CONNECTION_LINE.search(line)]
    assert len(said) <= 3, said  # connecting, connected, connection lost (it lasted 0.0 s)
    logged = [e["state"] for e in read_jsonl(events) if e["type"] == "connection"]
    # The go_away is in the event log only; closed is the end of the run.
    assert logged == ["connecting", "connected", "go_away", "disconnected", "closed"], logged


# --------------------------------------------------------------------------------------------
# lookout ask: a reply with nothing in it is an error in one line, exit 1


@pytest.fixture
def rest() -> Iterator[ThreadedFakeGenerateServer]:
    with FakeGenerateServer.run_in_thread() as srv:
        yield srv


@pytest.mark.parametrize(
    "body",
    [{"candidates": "x"}, {"candidates": [{}]}, "[" * 100_000 + "]" * 100_000],
    ids=["candidates a string", "an empty candidate", "nested arrays"],
)
def test_ask_with_a_reply_without_an_answer_exits_1_in_one_line(
    rest: ThreadedFakeGenerateServer, body: Any
) -> None:
    rest.set_responder(lambda request: FakeHttpError(200, body=body))
    result = subprocess.run(
        [sys.executable, "-m", "device.cli", "ask", "how many people?", "--model", "gemini-t",
         "--source", str(data_file("vtest.avi"))],
        cwd=REPO_ROOT, env=rest.subprocess_env(), capture_output=True, text=True, timeout=90,
        check=False,
    )  # fmt: skip
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout.strip() == ""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
