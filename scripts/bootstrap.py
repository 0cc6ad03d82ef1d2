"""Set Lookout up from a fresh clone and run it, or run its tests.

    python3 scripts/bootstrap.py run  [lookout run arguments...]
    python3 scripts/bootstrap.py test [pytest arguments...]

Both create ``.venv`` (if missing), install the project with its dev extras
(again only when pyproject.toml changed), and fetch the sample video into
``data/``. ``run`` then starts ``lookout run`` on its embedded defaults (the
sample video, the offline local model, no camera, no API key); ``test`` runs
ruff, mypy and the pytest suite. Only Python >= 3.11 and git are needed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".lookout-installed"


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(cmd: list[str | Path], **kw: object) -> None:
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, check=False, **kw)  # type: ignore[call-overload]
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_venv() -> None:
    if not PY.exists():
        step("creating .venv")
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == wanted:
        return
    step("installing lookout and its dev tools into .venv")
    run([PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", ".[dev]"])
    STAMP.write_text(wanted)


def ensure_data() -> None:
    run([PY, ROOT / "scripts" / "fetch_sample_data.py", "--dest", ROOT / "data"])


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in {"run", "test", "setup"}:
        sys.exit(__doc__)
    command, rest = sys.argv[1], sys.argv[2:]
    ensure_venv()
    ensure_data()
    if command == "run":
        step("lookout run " + " ".join(rest))
        os.execv(BIN / "lookout", [str(BIN / "lookout"), "run", *rest])
    elif command == "test":
        step("ruff")
        run([BIN / "ruff", "check", "."])
        step("mypy")
        run([BIN / "mypy"])
        step("pytest")
        run([PY, "-m", "pytest", *rest])


if __name__ == "__main__":
    main()
