"""What the benchmarks ran on: the CPU's model, its cores and the flags that matter here.

Every benchmark prints this line first: machines are shared and CPUs differ between
sessions, so a figure means little without the CPU it was measured on.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

# Instruction sets the detector's kernels use (onnxruntime's int8 and float paths).
RELEVANT_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni",
    "amx_int8", "asimd", "asimddp", "i8mm", "sve",
)  # fmt: skip


def describe_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """``CPU: AMD EPYC 7B13, 2 cores (x86_64); flags: avx avx2 fma ...``."""
    model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and value.strip():
            model = value.strip()
        elif key in ("flags", "features"):
            flags.update(value.split())
    shown = " ".join(f for f in RELEVANT_FLAGS if f in flags) or "none of note"
    return f"CPU: {model}, {os.cpu_count()} cores ({platform.machine()}); flags: {shown}"


if __name__ == "__main__":
    print(describe_cpu())
