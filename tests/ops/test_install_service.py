"""scripts/install-service.sh: the systemd unit it writes, seen through --dry-run."""

from __future__ import annotations

import configparser
import subprocess
from pathlib import Path

import pytest

from tests.datafiles import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "install-service.sh"


def install(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30, check=False
    )


def test_dry_run_prints_the_unit_and_changes_nothing(tmp_path: Path) -> None:
    units = tmp_path / "units"
    result = install(
        "--dry-run", "--venv", "/opt/lookout/.venv", "--user", "camera",
        "--config", "/etc/lookout/site.toml", "--unit-dir", str(units),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not units.exists()
    assert "dry run: nothing is changed" in result.stderr
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(result.stdout)
    service = unit["Service"]
    assert (
        service["ExecStart"] == "/opt/lookout/.venv/bin/lookout run --config /etc/lookout/site.toml"
    )
    assert service["Restart"] == "on-failure"
    assert service["User"] == "camera" and service["Group"] == "camera"
    assert service["EnvironmentFile"] == "-/etc/lookout/lookout.env"
    assert service["NoNewPrivileges"] == "yes" and service["StateDirectory"] == "lookout"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert "network-online.target" in unit["Unit"]["After"]
    assert "time-sync.target" in unit["Unit"]["After"]  # the clock is set before it starts
    assert "GEMINI_API_KEY=" not in result.stdout  # secrets never go into the unit


def test_default_config_path_is_the_system_one() -> None:
    result = install("--dry-run", "--venv", "/srv/venv")
    assert "ExecStart=/srv/venv/bin/lookout run --config /etc/lookout/lookout.toml" in result.stdout
    assert "User=lookout" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown option --bogus"),
        (["--venv", "relative/venv"], "absolute path"),
        (["--venv", "/opt/with space"], "absolute path"),
        (["--user", "Root;rm"], "not a valid user name"),
        (["--config"], "--config needs a value"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = install("--dry-run", *args)
    assert result.returncode == 2 and message in result.stderr
    assert result.stdout == ""


def test_dry_run_names_a_venv_the_service_user_cannot_reach(tmp_path: Path) -> None:
    # A venv in a home directory of mode 0700, the default on Debian and Raspberry Pi OS.
    home = tmp_path / "home" / "pi"
    venv = home / "lookout" / ".venv"
    (venv / "bin").mkdir(parents=True)
    lookout = venv / "bin" / "lookout"
    lookout.write_text("#!/bin/sh\n")
    lookout.chmod(0o755)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    home.chmod(0o700)
    try:
        result = install("--dry-run", "--venv", str(venv), "--user", "lookout-test-nobody")
    finally:
        home.chmod(0o755)
    assert result.returncode == 0, result.stderr
    problems = [line for line in result.stderr.splitlines() if line.startswith("# problem: ")]
    assert problems, result.stderr
    assert f"cannot reach {lookout}: {home} (mode 700) is closed to others" in problems[0]
    assert "the service would not start" in result.stderr


def test_the_example_config_is_current_complete_and_starts_a_looping_service(
    tmp_path: Path,
) -> None:
    import subprocess as sp
    import sys
    import tomllib

    from device.config import SETTINGS, build

    example = REPO_ROOT / "scripts" / "lookout.example.toml"
    printed = sp.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "example_config.py")],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert printed == example.read_text(), "run scripts/example_config.py > " + str(example)
    text = example.read_text()
    for name in SETTINGS:
        key = name.replace("_", "-") if f"{name.replace('_', '-')} =" in text else name
        assert f"{key} =" in text, f"{name} is missing from the example config"
    # Only loop is set: a service replaying the sample video runs until it is stopped.
    loaded = tomllib.loads(text)
    assert {key: table for key, table in loaded.items() if table} == {"source": {"loop": True}}
    config = build({}, environ={}, system_config=example)
    assert config.source.loop is True and config.source.source is None
