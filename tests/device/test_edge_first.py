"""Edge first, through the CLI: the device sees, counts and reports whether or not a model is there.

The real `lookout run` in a subprocess on the sample video; the model is Gemini
Live through the real SDK, pointed at an address where nothing listens, or at
the TLS fake Live server, which the tests drop, refuse and bring back.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.deliveries import assert_every_change_accounted_for
from tests.fakelive.server import FakeLiveServer, ThreadedFakeLiveServer
from tests.ops.support import free_port, wait_until

pytestmark = pytest.mark.slow


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lookout_run(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.Popen[str]:
    """``lookout run`` on the sample video; output goes to files (a full pipe would stall it)."""
    (tmp_path / "empty.toml").write_text("")  # never the machine's /etc/lookout/lookout.toml
    with (tmp_path / "stdout.txt").open("w") as out, (tmp_path / "stderr.txt").open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "device.cli", "run", "--config", str(tmp_path / "empty.toml"),
             "--source", str(data_file("vtest.avi")), *args],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip


def _outputs(proc: subprocess.Popen[str]) -> tuple[str, str]:
    config = Path(proc.args[proc.args.index("--config") + 1])  # type: ignore[union-attr, index]
    directory = config.parent
    return (directory / "stdout.txt").read_text(), (directory / "stderr.txt").read_text()


def stop(proc: subprocess.Popen[str], timeout: float = 20) -> tuple[int, str, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, *_outputs(proc)


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def get(url: str, timeout: float = 1.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def metric(body: str, name: str) -> float | None:
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def unreachable_gemini_env() -> dict[str, str]:
    env = offline_env()
    env.update(
        GEMINI_API_KEY="x-not-a-real-key",
        GOOGLE_GEMINI_BASE_URL=f"https://127.0.0.1:{closed_port()}",
    )
    return env


def test_with_the_model_unreachable_the_device_counts_serves_and_retries(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "events.jsonl"
    started = time.monotonic()
    proc = lookout_run(
        ["--http", f"127.0.0.1:{port}", "--events", str(log), "--fallback-after", "0", "--loop"],
        unreachable_gemini_env(),
        tmp_path,
    )
    try:
        # The status server answers at once, model or not; healthy as soon as it counts.
        url = f"http://127.0.0.1:{port}/healthz"
        wait_until(lambda: _answers(url) and get(url)[0] == 200, 15, "a healthy status server")
        status, body = get(url)
        health = json.loads(body)
        assert status == 200 and health["status"] == "degraded", health
        assert health["reason"].startswith("model unreachable since ")
        wait_until(lambda: len([e for e in events(log) if e["type"] == "count"]) >= 2, 30,
                   "two count changes")  # fmt: skip
        _, text = get(f"http://127.0.0.1:{port}/metrics")
        assert metric(text, "lookout_model_connected") == 0.0
        assert metric(text, "lookout_healthy") == 1.0 and metric(text, "lookout_degraded") == 1.0
        assert metric(text, 'lookout_people{camera="main"}') is not None
        attempts = lambda: [  # noqa: E731
            e for e in events(log) if e["type"] == "connection" and e["state"] == "unreachable"
        ]
        wait_until(lambda: len(attempts()) >= 1, 30, "a failed connection attempt")
        # Past the third attempt (waits of 0.5, 1 and 2 s): the run is said once, not per try.
        seen = time.monotonic()
        wait_until(lambda: time.monotonic() - seen > 4, 10, "more attempts")
    finally:
        code, out, err = stop(proc)
    assert code == 0, err
    assert time.monotonic() - started < 60
    # The first failure said with its reason and when the next try comes; the tries after
    # it (up to the 10th) are not said again (tests/faults/test_flapping_model.py).
    [said] = attempts()
    assert said["retry_in_s"] == 0.5 and "ConnectionRefusedError" in said["reason"]
    assert "model: connecting to gemini-3.8-live" in out
    assert "unreachable: could not connect: ConnectionRefusedError" in out
    assert "next attempt in 0.5 s" in out
    assert out.count("unreachable") == 1, out
    # With no model, the device says the changes itself (--fallback-after 0).
    assert "device: " in out and " people in view" in out
    assert "Traceback" not in err and "x-not-a-real-key" not in out + err


def _answers(url: str) -> bool:
    try:
        get(url, timeout=1.0)
    except OSError:
        return False
    return True


def test_require_model_restores_fail_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = lookout_run(
        ["--no-http", "--require-model", "--model-attempts", "2"],
        unreachable_gemini_env(),
        tmp_path,
    )
    # Gives up instead of retrying for ever. Generous: a process start alone took 23 s on
    # 2 cores beside other CPU-heavy jobs.
    code, out, err = stop_when_done(proc, timeout=90)
    assert code == 1
    assert time.monotonic() - started < 90
    assert "gave up: could not connect to the model after 2 attempts" in out
    assert "Traceback" not in err


def stop_when_done(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str, str]:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, *_outputs(proc)


# ------------------------------------------------------------- with the fake Live server


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def people(server: ThreadedFakeLiveServer, call_id: str) -> list[Any]:
    return [
        r
        for c in server.connections()
        for r in c.function_responses()
        if r.id == call_id and isinstance(r.response, dict) and "people" in r.response
    ]


def test_the_models_stop_ends_its_stream_not_the_devices_eyes(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    port = free_port()
    log = tmp_path / "events.jsonl"
    proc = lookout_run(
        ["--model", "gemini-3.8-live", "--http", f"127.0.0.1:{port}", "--events", str(log)],
        server.subprocess_env(),
        tmp_path,
    )
    try:
        server.wait_connection(1, timeout=30)
        (call_id,) = server.send_tool_call({"name": "count_people", "args": {}})
        server.wait_function_response(call_id, count=2, timeout=30)  # pending + current count
        (stop_id,) = server.send_tool_call(
            {"name": "stop_streaming", "args": {"function_name": "count_people"}}
        )
        answer = server.wait_function_response(stop_id, timeout=30)
        assert "Successfully stopped" in answer.response["status"]
        stopped_at = max(e["t"] for e in events(log) if e["type"] == "stream_stopped")
        # The device goes on counting: new changes reach the log, the page and /metrics.
        wait_until(
            lambda: any(e["type"] == "count" and e["t"] > stopped_at for e in events(log)),
            40,
            "a count change after the model's stop",
        )
        _, state = get(f"http://127.0.0.1:{port}/api/state")
        assert json.loads(state)["count"] is not None
        status, _ = get(f"http://127.0.0.1:{port}/healthz")
        assert status == 200
        before = len(people(server, call_id))
    finally:
        code, _, err = stop(proc)
    assert code == 0, err
    # Nothing more went to the model on the stopped call.
    assert len(people(server, call_id)) == before


def test_a_returning_model_hears_one_coalesced_state_per_stream(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    proc = lookout_run(
        ["--model", "gemini-3.8-live", "--no-http", "--events", str(log), "--pace", "fast",
         "--loop"],
        server.subprocess_env(),
        tmp_path,
    )  # fmt: skip
    try:
        server.wait_connection(1, timeout=30)
        (call_id,) = server.send_tool_call({"name": "count_people", "args": {}})
        server.wait_function_response(call_id, count=3, timeout=30)
        server.send_resumption_update("handle-before-the-outage")
        # The service goes away: the connection drops and setups are refused for a while.
        server.set_options(setup_close_code=1011)
        server.close_connection(1011, "internal error")
        counts_then = len([e for e in events(log) if e["type"] == "count"])
        wait_until(
            lambda: len([e for e in events(log) if e["type"] == "count"]) >= counts_then + 3,
            60,
            "three count changes while the model is away",
        )
        # The first refused setup comes after a back-off (the lost connection had not lasted).
        wait_until(
            lambda: any(
                e["type"] == "connection" and e["state"] == "unreachable" for e in events(log)
            ),
            30,
            "the model said unreachable",
        )
        server.set_options(setup_close_code=None)
        # (The predicates run on the server's own loop: they read its list directly.)
        back = server.wait_for(
            lambda: next(
                (c for c in server.server.connections[1:] if c.setup_completed and not c.closed),
                None,
            ),
            timeout=30,
        )
        assert back.resumption_handle == "handle-before-the-outage"
        server.wait_for(
            lambda: any(r.id == call_id for r in back.function_responses()) or None, timeout=30
        )
    finally:
        code, _, err = stop(proc)
    assert code == 0, err
    all_counts = [(e["count"], e["previous"]) for e in events(log) if e["type"] == "count"]
    delivered = [r.response for r in people(server, call_id)]
    merged = [r for r in delivered if "while_away" in r]
    # The changes made while it was away reached it as one state, not a replay.
    assert merged, delivered
    assert merged[0]["while_away"]["changes"] >= 3
    # The run is stopped mid-stream (--loop): a change seen in its last seconds, while the
    # stop was under way, may have had no one left to tell; every earlier one was told.
    times = [e["t"] for e in events(log) if e["type"] == "count"]
    late = sum(1 for t in times if t >= times[-1] - 3.0)
    assert_every_change_accounted_for(delivered, all_counts, may_be_untold=late)


def test_typed_count_is_answered_from_perception_through_a_real_tool_call(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    (tmp_path / "empty.toml").write_text("")
    proc = subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--config", str(tmp_path / "empty.toml"),
         "--model", "local",
         "--no-http", "--stdin", "--events", str(log), "--source", str(data_file("vtest.avi"))],
        cwd=REPO_ROOT, env=offline_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: any(e["type"] == "count" for e in events(log)), 30, "a count")
        assert proc.stdin is not None
        proc.stdin.write("count\nstop\nstatus\nquit\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "count: " in out and " in view" in out
    assert "the device keeps counting" in out
    calls = [e for e in events(log) if e["type"] == "tool_call" and e["name"] == "count_people_now"]
    assert calls and calls[0]["id"].startswith("device-")
    answers = [e for e in events(log) if e["type"] == "tool_result" and e["id"] == calls[0]["id"]]
    assert isinstance(answers[0]["response"]["people"], int)
