"""Ephemeral tokens: `lookout token` mints one with the key (the REST fake), and `lookout run
--token-file` / `--token-url` connects with a token per connection and no key in its
environment (the Live fake, which checks the endpoint, the token and its expiry); a refused
token is fetched again. The real CLI and the real google-genai SDK over TLS throughout."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.datafiles import REPO_ROOT, data_file
from tests.fakelive import FakeGenerateServer, FakeLiveServer, ThreadedFakeLiveServer
from tests.fakelive.endpoint import DEFAULT_API_KEY
from tests.fakelive.tokens import TOKEN_METHOD, TOKEN_REFUSED_CODE

pytestmark = pytest.mark.slow

MODEL = "gemini-3.8-live"
KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def test_lookout_token_mints_with_the_key_and_prints_only_the_name() -> None:
    with FakeGenerateServer.run_in_thread() as srv:
        before = dt.datetime.now(dt.UTC)
        result = subprocess.run(
            [sys.executable, "-m", "device.cli", "token", "--model", MODEL, "--uses", "2",
             "--expire", "10m", "--new-session-expire", "90s", "--lock-config"],
            cwd=REPO_ROOT, env=srv.subprocess_env(), capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        (request,) = srv.requests
    assert result.returncode == 0, result.stderr
    assert result.stdout == "auth_tokens/fake-minted-0\n"
    assert DEFAULT_API_KEY not in result.stdout + result.stderr
    assert request.path == "/v1alpha/auth_tokens" and request.api_key == DEFAULT_API_KEY
    body = request.body
    assert body["uses"] == 2
    expire = dt.datetime.fromisoformat(body["expireTime"])
    new_session = dt.datetime.fromisoformat(body["newSessionExpireTime"])
    assert dt.timedelta(minutes=9) < expire - before < dt.timedelta(minutes=11)
    assert dt.timedelta(seconds=80) < new_session - before < dt.timedelta(seconds=100)
    setup = body["bidiGenerateContentSetup"]
    assert setup["model"] == f"models/{MODEL}"
    assert setup["generationConfig"]["responseModalities"] == ["AUDIO"]
    # Only what was given is locked: the device still sends its instruction and tools.
    assert "model" in body["fieldMask"] and "systemInstruction" not in body["fieldMask"]


def test_lookout_token_writes_a_token_file_whole_with_its_expiry(tmp_path: Path) -> None:
    """What a provisioning script runs: ``--out`` writes the JSON a device's --token-file
    reads (name, expiry, uses), readable by its owner only; ``--json`` prints it."""
    out = tmp_path / "gemini-token"
    with FakeGenerateServer.run_in_thread() as srv:
        before = dt.datetime.now(dt.UTC).replace(microsecond=0)
        for args in (("--out", str(out)), ("--json",)):
            result = subprocess.run(
                [sys.executable, "-m", "device.cli", "token", "--expire", "2h", *args],
                cwd=REPO_ROOT, env=srv.subprocess_env(), capture_output=True, text=True,
                timeout=60, check=False,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            if args[0] == "--out":
                assert result.stdout == ""
    written = json.loads(out.read_text())
    printed = json.loads(result.stdout)
    assert written["name"] == "auth_tokens/fake-minted-0"
    assert printed["name"] == "auth_tokens/fake-minted-1"
    expires = dt.datetime.fromisoformat(written["expireTime"])
    assert dt.timedelta(minutes=119) < expires - before < dt.timedelta(minutes=121)
    assert written["uses"] == 1 and "newSessionExpireTime" in written
    assert out.stat().st_mode & 0o077 == 0
    assert [p.name for p in tmp_path.iterdir()] == ["gemini-token"]  # no temporary left
    assert DEFAULT_API_KEY not in out.read_text() + result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--expire", "soon"), "--expire 'soon': give a duration such as 90s, 30m or 2h"),
        (("--expire", "21h"), "--expire: at most 20h"),
        (("--uses", "0"), "--uses 0: at least 1"),
        (("--expire", "1m", "--new-session-expire", "2m"), "not after --expire"),
        (("--out", "/nonexistent/token"), "--out /nonexistent/token: no such folder /nonexistent"),
    ],
)
def test_lookout_token_refuses_what_cannot_be_minted_in_one_line(
    args: tuple[str, ...], said: str
) -> None:
    from tests.cli import lookout_in_process

    result = lookout_in_process("token", *args)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert said in line


@pytest.fixture
def server() -> Iterator[ThreadedFakeLiveServer]:
    with FakeLiveServer.run_in_thread() as srv:
        yield srv


def device_env(server: ThreadedFakeLiveServer) -> dict[str, str]:
    """The fake's environment with no key in it: the device holds only tokens."""
    env = server.subprocess_env()
    for name in (*KEY_VARIABLES, "GOOGLE_GENAI_API_VERSION"):
        env.pop(name, None)
    return env


def run_with(server: ThreadedFakeLiveServer, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "device.cli", "run", "--model", MODEL, "--no-http",
         "--source", str(data_file("vtest.avi")), "--duration", "120", *args],
        cwd=REPO_ROOT, env=device_env(server), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    return out, err


def test_a_token_file_is_read_again_at_each_connection(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    live = server.server
    token_file = tmp_path / "token"
    events = tmp_path / "events.jsonl"
    first = server.issue_token()
    token_file.write_text(first + "\n")
    proc = run_with(server, "--token-file", str(token_file), "--events", str(events))
    try:
        conn = server.wait_connection(1, timeout=60)
        (call,) = server.send_tool_call({"name": "count_people", "args": {}})
        server.wait_function_response(call, timeout=60)
        # The provisioning side renews the file; the device reads it at its next connection.
        second = server.issue_token()
        replace_file(token_file, second + "\n")
        server.send_resumption_update("h-1")
        server.drop_connection()
        resumed = server.wait_connection(2, timeout=30)
        # An expired token in the file: refused, read again (the same), retried later, and
        # the renewed one is taken.
        expired = server.issue_token()
        server.expire_token(expired)
        replace_file(token_file, expired + "\n")
        server.drop_connection()
        server.wait_for(
            lambda: any(c.token == expired and c.closed for c in live.connections), timeout=30
        )
        third = server.issue_token()
        replace_file(token_file, third + "\n")
        last = server.wait_for(
            lambda: next((c for c in live.connections if c.token == third and c.setup_completed),
                         None),
            timeout=60,
        )  # fmt: skip
    finally:
        out, err = stop(proc)
    assert (conn.token, resumed.token, last.token) == (first, second, third)
    assert resumed.resumption_handle == "h-1"
    for c in server.connections():
        assert c.method == TOKEN_METHOD and c.version == "v1alpha"
        # The SDK also puts the token (never a key) in x-goog-api-key.
        assert c.api_key == c.token
    refused = [c for c in server.connections() if c.token == expired]
    assert refused and all(c.close_code == TOKEN_REFUSED_CODE for c in refused)
    # Whether the device read the expired token again before the new one was written (a
    # failed attempt, "has no new token yet") depends on timing; either way no token is said.
    for token in (first, second, expired, third):
        assert token not in out + err + events.read_text()


def replace_file(path: Path, text: str) -> None:
    """As a provisioning script renews a token: the new file whole, or the old one (a
    device reading at the wrong moment never sees half a file)."""
    partial = path.with_name(path.name + ".new")
    partial.write_text(text)
    os.replace(partial, path)


class TokenDesk:
    """A token URL: each GET takes the next token of ``queue``, or the last one again."""

    def __init__(self, queue: list[str]) -> None:
        self.queue = queue
        self.last = ""
        self.gets = 0
        self.lock = threading.Lock()
        desk = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with desk.lock:
                    desk.gets += 1
                    token = desk.last = desk.queue.pop(0) if desk.queue else desk.last
                body = token.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/token"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TokenDesk:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, token: str) -> None:
        with self.lock:
            self.queue.append(token)


def test_a_token_url_gives_a_fresh_token_per_connection_and_a_refused_one_is_fetched_again(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    live = server.server
    expired = server.issue_token()
    server.expire_token(expired)
    fresh = server.issue_token()
    events = tmp_path / "events.jsonl"
    with TokenDesk([expired, fresh]) as desk:
        proc = run_with(server, "--token-url", desk.url, "--events", str(events))
        try:
            # The expired token is refused, and a fresh one is fetched at once.
            conn = server.wait_for(
                lambda: next((c for c in live.connections if c.setup_completed), None), timeout=60
            )
            gets_first = desk.gets
            # A drop: the reconnect fetches again (a token per connection).
            later = server.issue_token()
            desk.add(later)
            server.drop_connection()
            server.wait_for(
                lambda: any(c.token == later and c.setup_completed for c in live.connections),
                timeout=30,
            )
        finally:
            out, err = stop(proc)
        gets = desk.gets
    connections = server.connections()
    assert [c.token for c in connections] == [expired, fresh, later]
    assert connections[0].close_code == TOKEN_REFUSED_CODE
    assert conn.token == fresh and gets_first == 2 and gets == 3
    # Fetched again within the same attempt: the session never saw the refusal.
    states = [e["state"] for e in read_jsonl(events) if e["type"] == "connection"]
    assert states[: states.index("connected")] == ["connecting"]
    for token in (expired, fresh, later):
        assert token not in out + err


def doctor_with(server: ThreadedFakeLiveServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "device.cli", "doctor", "--source", str(data_file("vtest.avi")),
         "--model", MODEL, *args],
        cwd=REPO_ROOT, env=device_env(server), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip


def model_line(result: subprocess.CompletedProcess[str]) -> str:
    return next(x for x in result.stdout.splitlines() if "] model" in x)


def test_lookout_doctor_reads_a_token_without_spending_it_and_says_how_long_it_lasts(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    """A one-use token spent by the doctor would leave run refused until the file is
    renewed: the doctor reads it, says its expiry, and connects only when told to."""
    token_file = tmp_path / "token"
    token = server.issue_token()
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=30)
    token_file.write_text(json.dumps({
        "name": token, "expireTime": expires.isoformat().replace("+00:00", "Z"), "uses": 1,
    }))  # fmt: skip
    result = doctor_with(server, "--token-file", str(token_file))
    assert result.returncode == 0, result.stdout + result.stderr
    line = model_line(result)
    assert "[  ok]" in line and f"a token from --token-file {token_file}" in line
    assert f"expires {expires:%Y-%m-%d %H:%M}" in line and "1 use;" in line
    assert "not tried" in line and "--spend-token" in line
    assert server.connections() == []  # nothing spent
    # The same token, tried on purpose: one handshake, as run would.
    result = doctor_with(server, "--token-file", str(token_file), "--spend-token")
    assert result.returncode == 0, result.stdout + result.stderr
    line = model_line(result)
    assert "[  ok]" in line and "setup accepted" in line and "ephemeral token" in line
    (conn,) = server.connections()
    assert conn.method == TOKEN_METHOD and conn.token == token
    assert token not in result.stdout + result.stderr


def test_lookout_doctor_fails_a_token_file_that_cannot_open_a_session(
    server: ThreadedFakeLiveServer, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    token_file.write_text(json.dumps({"name": "auth_tokens/old", "expireTime": past.isoformat()}))
    result = doctor_with(server, "--token-file", str(token_file))
    assert result.returncode == 1
    line = model_line(result)
    assert "[FAIL]" in line and f"expired at {past:%Y-%m-%d %H:%M}" in line
    assert "by this device's clock" in line
    token_file.write_text("AIzaSy-an-api-key-by-mistake")
    result = doctor_with(server, "--token-file", str(token_file))
    assert result.returncode == 1 and "not an ephemeral token" in model_line(result)
    assert "AIzaSy" not in result.stdout + result.stderr
    assert server.connections() == []
