"""Device profiles: settings that fit the detector to a CPU (``--profile``).

A profile only changes defaults: whatever the config file or a flag sets
explicitly wins. The budget is about a quarter of one core on average for a
count; the per-inference times behind the choices are estimates from
published CPU ratios (NanoDet-g fp32: ~44-60 ms on one x86 core here, ~94 ms on a
Pi 5, 310-610 ms on a Pi 4; int8 about a fifth less on x86), not measurements on a
Pi (docs/raspberry-pi.md).

``auto`` reads the board's name from the device tree (or /proc/cpuinfo): a
Raspberry Pi 4 or 5 gets its profile. Any other board is measured: the detector the
run would choose (``--backend``/``--precision auto``: ``models/choice.py``, one
thread, as it runs) is timed at start-up, and when the default detection rate
would cost more than the budget, int8 is timed too and chosen, with the rate
lowered until it fits (never below one detection every two seconds). So an old
laptop or a board nobody named gets settings that fit it, and a fast one keeps the
defaults.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from device.config.values import DETECT_FPS, SCENE_DETECT_FPS

Board = Literal["pi4", "pi5", "laptop"]
MODEL_FILES = (Path("/proc/device-tree/model"), Path("/proc/cpuinfo"))
CPU_BUDGET = 0.25  # of one core, on average, for detection (the rest of the device is small)
MIN_DETECT_FPS = 0.5  # below this a count is too slow to be worth showing as live
MIN_SCENE_FPS = 2.5  # below this a line misses most crossings (the Pi 4 profile's rate)
TIMED_RUNS = 3  # after one warm-up run; the median is kept

# Milliseconds one detection takes here, by precision (measured once a process).
DetectionTimer = Callable[[str], float]


def board_from_text(text: str) -> Board:
    """The profile for a device-tree model string or a /proc/cpuinfo."""
    if "Raspberry Pi 5" in text:
        return "pi5"
    if "Raspberry Pi 4" in text or "Raspberry Pi Compute Module 4" in text:
        return "pi4"
    return "laptop"


def detect_board(files: tuple[Path, ...] | None = None) -> Board:
    for path in MODEL_FILES if files is None else files:
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        board = board_from_text(text)
        if board != "laptop":
            return board
    return "laptop"


def time_detection(precision: str, backend: str = "auto") -> float:
    """Milliseconds of CPU one detection of the shipped model takes here, one thread, as
    the run would make it (``--backend``: the variant chosen for these settings)."""
    from device.config.detector.choice import detector_choice
    from models.detector import DetectorError

    try:
        choice = detector_choice(backend, precision, None, 1)
    except ValueError as exc:  # openvino asked for and missing: the run's checks say it
        raise DetectorError(str(exc)) from None
    if choice.ms is None:  # one candidate only: nothing was timed yet
        from models.choice import measure

        row = measure([choice.variant])[0]
        if row.ms is None:
            raise DetectorError(row.error)
        return row.ms
    return choice.ms


def fit_rate(
    ms: float, rate: float, budget: float = CPU_BUDGET, floor: float = MIN_DETECT_FPS
) -> float:
    """The highest rate, in half steps and at most ``rate``, at which detections of ``ms``
    cost at most ``budget`` of a core (never below ``floor``)."""
    fits = math.floor(budget * 1000 / ms * 2) / 2
    return max(floor, min(rate, fits))


def measured_defaults(
    *, scene: bool, timer: DetectionTimer = time_detection
) -> tuple[dict[str, Any], str]:
    """What ``auto`` sets on a board it does not know, and why (one line)."""
    # Imported here for start-up time (onnxruntime): only auto on an unknown board needs it.
    from models.detector import DetectorError

    rate = SCENE_DETECT_FPS if scene else DETECT_FPS
    try:
        best = timer("auto")  # the precision auto keeps: fp32 unless another holds the rule
    except DetectorError as exc:  # the run's own preflight then says it as a usage error
        return {}, f"profile auto: the detector could not be timed ({exc}): the defaults"
    if best * rate / 1000 <= CPU_BUDGET:
        return {}, (
            f"profile auto: a detection takes {best:.0f} ms here; the defaults ({rate:g} a "
            f"second) fit within {CPU_BUDGET:.0%} of a core"
        )
    try:
        int8 = timer("int8")
    except DetectorError as exc:
        return {}, f"profile auto: int8 could not be timed ({exc}): the defaults"
    fitted = fit_rate(int8, rate, floor=MIN_SCENE_FPS if scene else MIN_DETECT_FPS)
    chosen: dict[str, Any] = {"precision": "int8"}
    if fitted < rate:
        chosen["detect_fps"] = fitted
    cost = int8 * fitted / 1000
    over = "" if cost <= CPU_BUDGET + 1e-9 else f" (over budget: lines need {fitted:g})"
    return chosen, (
        f"profile auto: a detection takes {best:.0f} ms here, {int8:.0f} ms in int8; "
        f"int8 at {fitted:g} a second, about {cost:.0%} of a core{over}"
    )


def profile_defaults(
    profile: str, *, scene: bool, timer: DetectionTimer | None = None, backend: str = "auto"
) -> Mapping[str, Any]:
    """The settings ``profile`` (pi4, pi5, laptop, or auto) puts in place of the defaults.

    ``scene``: lines or zones are configured (they need more detections a second).
    """
    return profile_choice(profile, scene=scene, timer=timer, backend=backend)[0]


def profile_choice(
    profile: str, *, scene: bool, timer: DetectionTimer | None = None, backend: str = "auto"
) -> tuple[Mapping[str, Any], str]:
    """``profile_defaults`` and the one line that says what was chosen and why
    (``backend``: the one set, which the timing uses)."""
    if timer is None:
        timer = functools.partial(time_detection, backend=backend)
    if profile == "auto":
        board = detect_board()
        if board == "laptop":
            return measured_defaults(scene=scene, timer=timer)
        chosen = board_defaults(board, scene=scene)
        return chosen, f"profile auto: a Raspberry Pi {board[2:]}: {describe(chosen)}"
    chosen = board_defaults(profile, scene=scene)
    return chosen, f"profile {profile}: {describe(chosen)}"


def describe(chosen: Mapping[str, Any]) -> str:
    if not chosen:
        return "the defaults"
    return ", ".join(f"{k.replace('_', '-')} {v}" for k, v in chosen.items())


def board_defaults(board: str, *, scene: bool) -> Mapping[str, Any]:
    """The fixed choices for a named board (estimates, not measurements: see the top)."""
    if board == "pi4":
        # ~0.3 s an int8 detection: 1 a second for a count; lines get 2.5 (at that rate the
        # sample video's lamp-post line counts 10 in / 13 out against 12 / 16 by hand).
        return {"precision": "int8", "detect_fps": 2.5 if scene else 1.0}
    if board == "pi5":
        return {"precision": "int8"}  # ~70 ms: the default rates fit
    return {}


__all__ = [
    "Board",
    "board_defaults",
    "board_from_text",
    "detect_board",
    "fit_rate",
    "measured_defaults",
    "profile_choice",
    "profile_defaults",
    "time_detection",
]
