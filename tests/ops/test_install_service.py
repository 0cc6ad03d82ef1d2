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
