"""Exposure rules through the real CLI: what cannot be turned off by accident."""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.cli import LOOKOUT, lookout, offline_env
from tests.datafiles import REPO_ROOT, data_file
from tests.ops.support import free_port

pytestmark = pytest.mark.slow


def refusal(*args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [*LOOKOUT, *args], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
        env=env or offline_env(), check=False,
    )  # fmt: skip
    assert result.returncode == 2, (args, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def run_args(tmp_path: Path, *args: str) -> list[str]:
    (tmp_path / "empty.toml").write_text("")
    return ["run", "--config", str(tmp_path / "empty.toml"), "--pace", "fast", "--duration", "1",
            *args]  # fmt: skip


def test_the_network_without_a_token_is_refused_unless_the_user_says_insecure(
    tmp_path: Path,
) -> None:
    line = refusal(*run_args(tmp_path, "--http", f"0.0.0.0:{free_port()}"))
    assert "reachable from the network" in line and "--http-insecure" in line
    ok = lookout(*run_args(tmp_path, "--http", f"0.0.0.0:{free_port()}", "--http-insecure"))
    assert ok.returncode == 0, ok.stderr
    # Said, loudly, once: a console line like every other, not a log line on stderr.
    said = [line for line in ok.stdout.splitlines() if "WITHOUT a token" in line]
    assert len(said) == 1 and re.match(r"\[\s*\d+\.\ds\] warning: status server", said[0]), said
    assert "WITHOUT a token" not in ok.stderr


def test_an_empty_token_is_a_configuration_error_wherever_it_comes_from(tmp_path: Path) -> None:
    line = refusal(*run_args(tmp_path, "--http-token", ""))
    assert line.startswith("lookout: --http-token is empty"), line
    env = offline_env() | {"LOOKOUT_HTTP_TOKEN": ""}
    assert "LOOKOUT_HTTP_TOKEN is empty" in refusal(*run_args(tmp_path), env=env)
    empty = tmp_path / "token"
    empty.write_text("\n")
    assert "the token is empty" in refusal(*run_args(tmp_path, "--http-token-file", str(empty)))
    missing = tmp_path / "nope"
    assert str(missing) in refusal(*run_args(tmp_path, "--http-token-file", str(missing)))
    both = refusal(*run_args(tmp_path, "--http-token", "abc", "--http-token-file", str(empty)))
    assert "not both" in both


def _status(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


@pytest.mark.parametrize("where", ["file", "env"])
def test_a_token_from_a_file_or_the_environment_guards_the_page_and_stays_out_of_ps(
    tmp_path: Path, where: str
) -> None:
    token = "t0k-" + os.urandom(8).hex()
    port = free_port()
    env = offline_env()
    args = [*LOOKOUT, "run", "--config", str(tmp_path / "empty.toml"), "--loop",
            "--source", str(data_file("vtest.avi")), "--http", f"127.0.0.1:{port}"]  # fmt: skip
    (tmp_path / "empty.toml").write_text("")
    if where == "file":
        (tmp_path / "token").write_text(token + "\n")
        args += ["--http-token-file", str(tmp_path / "token")]
    else:
        env["LOOKOUT_HTTP_TOKEN"] = token
    with (tmp_path / "out.txt").open("w") as out:
        proc = subprocess.Popen(args, cwd=REPO_ROOT, env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/api/state"
        deadline = time.monotonic() + 30
        while _status(url) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)  # polling a server that is starting in another process
        assert _status(url) == 401
        assert _status(url, token) == 200
        assert token not in " ".join(proc.args)  # type: ignore[arg-type]
        with open(f"/proc/{proc.pid}/cmdline", "rb") as cmdline:
            assert token.encode() not in cmdline.read()
    finally:
        proc.terminate()
        proc.wait(20)
    assert token not in (tmp_path / "out.txt").read_text()


def test_camera_passwords_never_reach_logs_events_or_the_db(tmp_path: Path) -> None:
    camera = f"rtsp://viewer:s3cr3t-pw@127.0.0.1:{free_port()}/stream"
    events, db = tmp_path / "events.jsonl", tmp_path / "events.sqlite"
    result = lookout(*run_args(tmp_path, "--source", camera, "--verbose", "--no-http",
                               "--events", str(events), "--db", str(db)))  # fmt: skip
    assert result.returncode == 0, result.stderr
    # The effective configuration shows the camera without its user info.
    assert "'source': 'rtsp://127.0.0.1:" in result.stderr
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("events.sqlite*"))  # with any WAL
    everything = result.stdout + result.stderr + events.read_text() + stored.decode("latin-1")
    assert "s3cr3t-pw" not in everything
    doctor = lookout("doctor", "--source", camera, timeout=60)
    assert "s3cr3t-pw" not in doctor.stdout + doctor.stderr
