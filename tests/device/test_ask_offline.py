"""`lookout ask` with a key but no network: the local model answers, said in one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.datafiles import REPO_ROOT, data_file

pytestmark = pytest.mark.slow


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    "base_url", [f"https://127.0.0.1:{closed_port()}", "https://no-such-host.invalid"]
)
def test_without_a_network_the_local_model_answers_and_says_so(base_url: str) -> None:
    env = {**os.environ, "GEMINI_API_KEY": "a-key", "GOOGLE_GEMINI_BASE_URL": base_url}
    env.pop("GOOGLE_API_KEY", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "device.cli",
            "ask",
            "how many people?",
            "--source",
            str(data_file("vtest.avi")),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 people in view")
    said = [line for line in done.stderr.splitlines() if "local model answers" in line]
    assert len(said) == 1 and "cannot reach" in said[0]
    assert "SSLContext" not in done.stderr and "Traceback" not in done.stderr
    assert "a-key" not in done.stdout + done.stderr
