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


def lookout_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``lookout ARGS`` run by calling ``device.cli.main`` here, for refusals that end
    before anything starts (a subprocess per case would cost a second each)."""
    import contextlib
    import io

    from device.cli import main

    def no_hard_exit(code: int) -> None:
        # A whole run ends with os._exit when threads linger: here that would end the
        # test process itself, with exit status 0 and the remaining tests never run.
        raise AssertionError("lookout_in_process ran a whole run: use lookout() instead")

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        hard_exit, os._exit = os._exit, no_hard_exit  # type: ignore[assignment]
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit = hard_exit
    return subprocess.CompletedProcess(["lookout", *args], code, out.getvalue(), err.getvalue())
