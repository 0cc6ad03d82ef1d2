"""Device profiles: settings that fit the detector to a CPU (``--profile``).

A profile only changes defaults: whatever the config file or a flag sets
explicitly wins. The budget is about a quarter of one core on average for a
count; the per-inference times behind the choices are estimates from
published CPU ratios (NanoDet-g fp32: ~44 ms on one x86 core here, ~94 ms on a
Pi 5, 310-610 ms on a Pi 4; int8 about a quarter less), not measurements on a
Pi (docs/raspberry-pi.md).

``auto`` reads the board's name from the device tree (or /proc/cpuinfo): a
Raspberry Pi 4 or 5 gets its profile, anything else ``laptop``. It does not
time the detector at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

Board = Literal["pi4", "pi5", "laptop"]
MODEL_FILES = (Path("/proc/device-tree/model"), Path("/proc/cpuinfo"))


def board_from_text(text: str) -> Board:
    """The profile for a device-tree model string or a /proc/cpuinfo."""
    if "Raspberry Pi 5" in text:
        return "pi5"
    if "Raspberry Pi 4" in text or "Raspberry Pi Compute Module 4" in text:
        return "pi4"
    return "laptop"


def detect_board(files: tuple[Path, ...] = MODEL_FILES) -> Board:
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        board = board_from_text(text)
        if board != "laptop":
            return board
    return "laptop"


def profile_defaults(profile: str, *, scene: bool) -> Mapping[str, Any]:
    """The settings ``profile`` (pi4, pi5, laptop, or auto) puts in place of the defaults.

    ``scene``: lines or zones are configured (they need more detections a second).
    """
    board = detect_board() if profile == "auto" else profile
    if board == "pi4":
        # ~0.3 s an int8 detection: 1 a second for a count; lines get 2.5 (at that rate the
        # sample video's lamp-post line counts 10 in / 13 out against 12 / 16 by hand).
        return {"precision": "int8", "detect_fps": 2.5 if scene else 1.0}
    if board == "pi5":
        return {"precision": "int8"}  # ~70 ms: the default rates fit
    return {}


__all__ = ["Board", "board_from_text", "detect_board", "profile_defaults"]
