"""Running the real `lookout` command in a subprocess, offline (no API key leaks in)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from tests.datafiles import REPO_ROOT

LOOKOUT = [sys.executable, "-m", "device.cli"]


def offline_env() -> dict[str, str]:
    """This environment without Gemini keys, so the command picks the local model."""
    return {k: v for k, v in os.environ.items() if k not in {"GEMINI_API_KEY", "GOOGLE_API_KEY"}}


def lookout(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOKOUT, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=offline_env(),
        check=False,
        **kw,
    )
