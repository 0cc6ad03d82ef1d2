"""A signal at any moment of ``lookout run``'s start, and a refusal at start: one line or
a clean stop, the exit code the README gives, and nothing half-made left behind (no empty
events file, no database holding only its schema, no empty snapshots folder)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli import offline_env
from tests.datafiles import REPO_ROOT

pytestmark = pytest.mark.slow

OUTPUTS = ("e.jsonl", "d.sqlite", "snaps")
LOOKOUT = Path(sys.executable).with_name("lookout")


def start(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    # The command as installed (its entry is what handles a signal while it starts).
    return subprocess.Popen(
        [str(LOOKOUT), "run", "--events", "e.jsonl", "--db", "d.sqlite",
         "--snapshots", "snaps", "--model", "local", "--config", str(tmp_path / "none.toml"),
         *extra],
        cwd=tmp_path, env={**offline_env(), "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def made(tmp_path: Path) -> list[str]:
    return [name for name in OUTPUTS if (tmp_path / name).exists()]


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_starting_or_as_the_run_begins_leaves_a_whole_run_or_nothing(
    tmp_path: Path, number: signal.Signals
) -> None:
    (tmp_path / "none.toml").write_text("")
    seen: set[int] = set()
    # From the device loading to the first frames: a spread of moments (the interpreter's
    # own first ~50 ms, before any of Lookout's code runs, are Python's).
    for delay in (0.15, 0.25, 0.35, 0.5, 0.65, 0.8, 1.0, 1.5):
        for name in OUTPUTS:
            path = tmp_path / name
            if path.is_dir():
                for child in path.iterdir():
                    child.unlink()
                path.rmdir()
            elif path.exists():
                path.unlink()
        process = start(tmp_path, "--http", "")
        time.sleep(delay)
        process.send_signal(number)
        _out, err = process.communicate(timeout=60)
        assert "Traceback" not in err, (delay, err)
        seen.add(process.returncode)
        if process.returncode == 130:
            # Stopped before the run began: said in one line, nothing made.
            assert err.strip().splitlines() == [
                "lookout: interrupted while starting; nothing was written"
            ], delay
            assert made(tmp_path) == [], delay
        else:
            # The run had begun: a clean stop, its log whole (its run event first).
            assert process.returncode == 0, (delay, err)
            logged = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
            assert logged and logged[0]["type"] == "run", delay
    assert seen <= {0, 130}


def test_a_port_in_use_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    (tmp_path / "none.toml").write_text("")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = start(tmp_path, "--http", f"127.0.0.1:{port}")
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert len(err.strip().splitlines()) == 1 and "in use" in err
    assert made(tmp_path) == []
