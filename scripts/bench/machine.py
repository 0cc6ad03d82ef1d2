"""What the benchmarks ran on: the CPU's model, its cores and the flags that matter.

Every benchmark prints this line first: machines are shared and CPUs differ between
sessions, so a figure means little without the CPU it was measured on. The description
is the device's own (``models/cpu.py``: ``lookout doctor`` says the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from models.cpu import describe_cpu

__all__ = ["describe_cpu"]

if __name__ == "__main__":
    print(describe_cpu())
