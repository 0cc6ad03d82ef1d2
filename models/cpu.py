"""What the CPU offers the detector: its model, cores and the instruction sets that matter.

The detector's speed on a machine depends on these more than on the clock: int8 pays where
the CPU has a dot-product instruction for it (x86 VNNI or AMX, Arm dotprod or i8mm), lower
precision floats where it has bf16 or fp16 arithmetic. ``lookout doctor`` says them, and
every benchmark prints them first (machines are shared and differ between sessions).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

# Instruction sets the detector's kernels use (onnxruntime's int8 and float paths).
RELEVANT_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni",
    "avx512_bf16", "amx_bf16", "amx_int8", "asimd", "asimddp", "asimdhp", "fphp", "i8mm",
    "bf16", "sve",
)  # fmt: skip
INT8_DOT = ("avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
HALF_FLOAT = ("avx512_bf16", "amx_bf16", "bf16", "asimdhp", "fphp")


@dataclass(frozen=True)
class Cpu:
    model: str
    cores: int
    machine: str
    flags: frozenset[str]

    def relevant(self) -> list[str]:
        return [f for f in RELEVANT_FLAGS if f in self.flags]

    def describe(self) -> str:
        """``CPU: AMD EPYC 7B13, 2 cores (x86_64); flags: avx avx2 fma ...``."""
        shown = " ".join(self.relevant()) or "none of note"
        return f"CPU: {self.model}, {self.cores} cores ({self.machine}); flags: {shown}"

    def for_the_detector(self) -> str:
        """What the flags mean for the detector's precision, in a line."""
        dot = [f for f in INT8_DOT if f in self.flags]
        half = [f for f in HALF_FLOAT if f in self.flags]
        int8 = (
            f"int8 has dot-product instructions ({', '.join(dot)})"
            if dot
            else "no int8 dot-product instructions: int8 gains less here"
        )
        halves = (
            f"; bf16/fp16 arithmetic ({', '.join(half)}): OpenVINO computes in it" if half else ""
        )
        return int8 + halves


def read_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> Cpu:
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
    return Cpu(model, os.cpu_count() or 1, platform.machine(), frozenset(flags))


def describe_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    return read_cpu(cpuinfo).describe()


__all__ = ["Cpu", "describe_cpu", "read_cpu"]
