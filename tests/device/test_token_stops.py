"""A token that cannot be had never holds up a running device, nor its stop.

A ``--token-file`` swapped while running for a named pipe (once a reconnection stuck
for ever, and SIGTERM no longer stopped the run),
and a ``--token-url`` that never answers (once SIGTERM took the fetch's 10 s timeout):
each is a failed connection attempt, said, and SIGTERM still ends the run within 2 s.
The real CLI against the Live fake (for the file) or a server that never answers.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import FakeLiveServer, ThreadedFakeLiveServer

pytestmark = pytest.mark.slow

MODEL = "gemini-3.8-live"
ADDRESS_SPACE = 6_000_000_000  # bytes: a run needs about 2 GB of it; /dev/zero read whole, all


def start_run(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_VERSION"):
        env.pop(name, None)
    (tmp_path / "empty.toml").write_text("")

    def capped() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    with (tmp_path / "out.txt").open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "device.cli", "run", "--config", str(tmp_path / "empty.toml"),
             "--model", MODEL, "--no-http", "--source", str(data_file("vtest.avi")), "--loop",
             "--log-level", "debug", *args],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, preexec_fn=capped,
        )  # fmt: skip


def said(tmp_path: Path) -> str:
    return (tmp_path / "out.txt").read_text(errors="replace")


def wait_until(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)  # polling another process's output


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def sigterm_takes(proc: subprocess.Popen[bytes]) -> float:
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return time.monotonic() - signalled


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def test_a_token_file_swapped_for_a_pipe_is_said_the_run_goes_on_and_sigterm_ends_it(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    """(/dev/zero and a huge file take the same path: tests/device/test_input_files.py.)"""
    token = tmp_path / "token.txt"
    token.write_text(server.issue_token() + "\n")
    events = tmp_path / "events.jsonl"
    args = ("--token-file", str(token), "--events", str(events))
    proc = start_run(server.subprocess_env(), tmp_path, *args)

    def counts() -> int:
        return events.read_text().count('"type":"count"') if events.exists() else 0

    try:
        server.wait_connection(1, timeout=60)
        # The provisioning side goes wrong: the file becomes a pipe, the model drops us.
        token.unlink()
        os.mkfifo(token)
        server.drop_connection()
        wait_until("said the pipe", lambda: "a named pipe, not a regular" in said(tmp_path), proc)
        assert rss_mb(proc.pid) < 1000
        # The device goes on counting meanwhile.
        before = counts()
        wait_until("counted on", lambda: counts() > before, proc)
        # Fixed: the next attempt connects with the new token.
        token.unlink()
        token.write_text(server.issue_token() + "\n")
        server.wait_connection(2, timeout=30)
        took = sigterm_takes(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = said(tmp_path)
    assert proc.returncode == 0, out[-3000:]
    assert took < 2.0, f"SIGTERM took {took:.2f} s"
    assert "Traceback" not in out
    assert f"no ephemeral token from --token-file {token}: a named pipe, not a regular" in out


class SilentServer:
    """Accepts a connection and reads the request, then says nothing, ever."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/token"
        self.asked = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            conn.recv(4096)
            self.asked.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_sigterm_ends_the_run_within_2_s_while_a_token_url_does_not_answer(
    tmp_path: Path,
) -> None:
    silent = SilentServer()
    try:
        proc = start_run(dict(os.environ), tmp_path, "--token-url", silent.url)
        try:
            wait_until("asked for a token", silent.asked.is_set, proc)
            took = sigterm_takes(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        silent.close()
    out = said(tmp_path)
    assert proc.returncode == 0, out[-3000:]
    assert took < 2.0, f"SIGTERM took {took:.2f} s"
    assert "Traceback" not in out


def test_a_token_url_that_drips_its_answer_is_given_up_after_its_timeout() -> None:
    """urlopen's timeout is per read: a byte every 0.1 s would hold a connection attempt
    for as long as the server likes. The whole fetch has the timeout."""
    import anyio

    from models.gemini.tokens import TokenUnavailable, TokenUrl

    sock = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            for _ in range(100):  # 10 s: a fetch without a limit of its own waits it out
                if stop.wait(0.1):
                    return
                conn.sendall(b"X")  # a header line that does not end

    threading.Thread(target=drip, daemon=True).start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/token"
    started = time.monotonic()
    try:
        with pytest.raises(TokenUnavailable) as caught:
            anyio.run(TokenUrl(url, timeout_s=0.5).token)
    finally:
        stop.set()
        sock.close()
    assert time.monotonic() - started < 5
    assert str(caught.value) == f"--token-url {url}: no answer in 0.5 s"
