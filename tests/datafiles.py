"""Where the sample media live: LOOKOUT_DATA_DIR, else <repo>/data, else <repo>/../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = Path(__file__).resolve().parent / "data"  # small files committed with the tests


def data_dirs() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("LOOKOUT_DATA_DIR")
    if env:
        dirs.append(Path(env))
    dirs += [REPO_ROOT / "data", REPO_ROOT.parent / "shared" / "data"]
    return dirs


def find_data_file(name: str) -> Path | None:
    for d in data_dirs():
        if (d / name).is_file():
            return d / name
    return None


def data_file(name: str) -> Path:
    """The path of a sample file; fails the calling test when it is nowhere to be found.

    Failing, not skipping: a suite that silently skips its real-video tests would
    pass without testing anything (the README's test command fetches the data).
    """
    path = find_data_file(name)
    if path is None:
        searched = ", ".join(str(d) for d in data_dirs())
        pytest.fail(
            f"sample file {name} not found (searched {searched}); "
            "run python3 scripts/fetch_sample_data.py or set LOOKOUT_DATA_DIR"
        )
    return path
