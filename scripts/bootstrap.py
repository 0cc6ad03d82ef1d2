"""Set Lookout up from a fresh clone and run it, or run its tests.

    python3 scripts/bootstrap.py run  [lookout run arguments...]
    python3 scripts/bootstrap.py test [pytest arguments...]

Both create ``.venv`` (if missing), install the project (again only when
pyproject.toml changed) and fetch the sample video into ``data/``. ``run`` (and
``setup``, which stops there) installs only what running needs (``pip install
-e .``) and then starts ``lookout run`` on its embedded defaults (the sample
video, the offline local model, no camera, no API key); ``test`` adds the dev
tools (``pip install -e .[dev]``: pytest, ruff, mypy, playwright, onnx,
matplotlib...) and runs ruff, mypy and the pytest suite. Only Python >= 3.11
and git are needed.

With ``LOOKOUT_SYSTEM_SITE_PACKAGES=1`` the virtual environment also sees the
system's Python packages (``venv --system-site-packages``): on a Raspberry Pi,
picamera2 comes from apt (python3-picamera2), not from PyPI. An existing
``.venv`` made without them is switched over in place.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".lookout-installed"


STARTED = time.monotonic()
HEARTBEAT_S = 15.0


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def run(cmd: list[str | Path], *, waiting_for: str = "", check: bool = True, **kw: object) -> int:
    """Run ``cmd``; with ``waiting_for``, say every few seconds that it is still at it.
    A failure ends the bootstrap with its code (``check``), else it is returned."""
    process = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, **kw)  # type: ignore[call-overload]
    started = time.monotonic()
    while True:
        try:
            code = process.wait(timeout=HEARTBEAT_S)
            break
        except subprocess.TimeoutExpired:
            if waiting_for:
                elapsed = time.monotonic() - started
                print(f"    ... still {waiting_for} ({elapsed:.0f} s so far)", flush=True)
    if code != 0 and check:
        sys.exit(code)
    return int(code)


def wants_system_site_packages() -> bool:
    value = os.environ.get("LOOKOUT_SYSTEM_SITE_PACKAGES", "").strip().lower()
    return value in {"1", "true", "yes", "on"}


def has_system_site_packages() -> bool:
    cfg = VENV / "pyvenv.cfg"
    lines = cfg.read_text().splitlines() if cfg.is_file() else []
    return "include-system-site-packages = true" in (line.strip().lower() for line in lines)


def installed() -> tuple[str, set[str]]:
    """The pyproject.toml hash and the extras the last install was made with."""
    words = STAMP.read_text().split() if STAMP.exists() else []
    return (words[0] if words else ""), set(words[1:])


# Where PyPI has OpenVINO wheels (the optional second detector backend).
OPENVINO_PLATFORMS = {("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"),
                      ("Windows", "AMD64")}  # fmt: skip


def optional_extras(command: str) -> tuple[str, ...]:
    """OpenVINO where it can pay: for ``run`` on a CPU with bf16/fp16 arithmetic (there it
    computes the detector in a quarter of onnxruntime's CPU; elsewhere it gains nothing);
    for ``test`` wherever it installs, so that its path is tested. ``--backend auto`` still
    keeps it only where it holds the accuracy rule. LOOKOUT_OPENVINO=0 leaves it out."""
    if os.environ.get("LOOKOUT_OPENVINO", "").strip().lower() in {"0", "no", "off", "false"}:
        return ()
    if (platform.system(), platform.machine()) not in OPENVINO_PLATFORMS:
        return ()
    if command == "test":
        return ("openvino",)
    sys.path.insert(0, str(ROOT))
    from models.cpu import HALF_FLOAT, read_cpu  # the standard library only

    flags = read_cpu().flags
    return ("openvino",) if any(f in flags for f in HALF_FLOAT) else ()


def ensure_venv(extras: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    system_site = wants_system_site_packages()
    if not PY.exists():
        step(
            "[1/3] creating the virtual environment .venv (a few seconds)"
            + (", with the system's packages" if system_site else "")
        )
        venv.EnvBuilder(with_pip=True, system_site_packages=system_site).create(VENV)
    elif system_site and not has_system_site_packages():
        step("[1/3] letting .venv see the system's packages (LOOKOUT_SYSTEM_SITE_PACKAGES)")
        venv.EnvBuilder(system_site_packages=True, upgrade=True).create(VENV)
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    digest, had = installed()
    # An optional extra that would not install here is not tried at every start.
    tried = {extra for extra in optional if extra in had or f"no-{extra}" in had}
    if digest == wanted and had >= set(extras) and tried == set(optional):
        return
    if digest != wanted:
        had = set()  # pyproject.toml changed: what was installed with it is installed again
    if extras:
        what = "the test tools (pytest, ruff, mypy, playwright, onnx, matplotlib...) beside "
        what += "Lookout's dependencies"
        size = 820
    else:
        what = "Lookout and what it needs to run: numpy, OpenCV, ONNX Runtime, google-genai, "
        what += "aiohttp"
        size = 430
    if optional:
        what += ", and OpenVINO, the second detector backend"
        size += 180
    step(
        f"[2/3] installing {what} (about {size} MB in all; usually 1 to 3 minutes, more on a "
        "slow line or a Raspberry Pi) into .venv from PyPI"
    )
    kept = {extra for extra in had if not extra.startswith("no-")}
    chosen = sorted(set(extras) | kept | set(optional))
    pip: list[str | Path] = [
        PY,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-e",
    ]
    target = "." + (f"[{','.join(chosen)}]" if chosen else "")
    code = run([*pip, target], waiting_for="installing", check=not optional)
    if code != 0:
        # Lookout runs without it (onnxruntime alone): installed without, said once.
        step(f"{', '.join(optional)} would not install here; going on without it")
        chosen = sorted(set(extras) | kept)
        target = "." + (f"[{','.join(chosen)}]" if chosen else "")
        run([*pip, target], waiting_for="installing")
        chosen += [f"no-{extra}" for extra in optional]
    STAMP.write_text(" ".join([wanted, *chosen]))


def ensure_data() -> None:
    step("[3/3] the sample video (data/vtest.avi, 8 MB: copied or downloaded once)")
    run(
        [PY, ROOT / "scripts" / "fetch_sample_data.py", "--dest", ROOT / "data"],
        waiting_for="fetching the sample video",
    )


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in {"run", "test", "setup"}:
        sys.exit(__doc__)
    command, rest = sys.argv[1], sys.argv[2:]
    # Running needs only Lookout's dependencies; the checks add the dev tools.
    ensure_venv(("dev",) if command == "test" else (), optional_extras(command))
    ensure_data()
    step(f"set up in {time.monotonic() - STARTED:.0f} s")
    if command == "run":
        step("lookout run " + " ".join(rest) + "  (Ctrl-C stops it)")
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
