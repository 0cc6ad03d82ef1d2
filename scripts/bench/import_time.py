"""What importing perception costs: this tree against an earlier checkout, in one run.

Each module is imported in a fresh interpreter (median of ``--repeat``), with the
tree's own code first on the path, and the table says whether the session's
heavy dependencies (google-genai, sqlite3, aiohttp) came with it.

    python scripts/bench/import_time.py [--before PATH] [--repeat 5] [MODULE ...]

--before is a checkout of the earlier Lookout (``git worktree add /tmp/before <commit>``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe_cpu

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "device.vision.lines",
    "device.vision.tracker",
    "device.vision.perception",
    "models.detector",
)
HEAVY = ("google.genai", "sqlite3", "aiohttp")
PROBE = (
    "import importlib, sys; name = sys.argv[1]; importlib.import_module(name); "
    "top = sys.modules[name.split('.')[0]]; "
    f"print(','.join(h for h in {HEAVY!r} if h in sys.modules) or '-'); print(top.__file__)"
)


def measure(tree: Path, module: str, repeat: int) -> tuple[float, str]:
    times: list[float] = []
    heavy = "-"
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", PROBE, module],
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        times.append(time.perf_counter() - start)
        if not out[1].startswith(str(tree)):
            sys.exit(f"{module} came from {out[1]}, not from {tree}")
        heavy = out[0]
    return statistics.median(times), heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", default=list(MODULES))
    parser.add_argument("--before", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trees = {"now": ROOT}
    if args.before is not None:
        trees = {"before": args.before.resolve(), **trees}
    print(describe_cpu())
    columns = (f"{name + ' ms':>12}{name + ' loads':>30}" for name in trees)
    header = f"{'module':20}" + "".join(columns)
    print(header)
    print("-" * len(header))
    for module in args.modules:
        row = f"{module:20}"
        for tree in trees.values():
            seconds, heavy = measure(tree, module, args.repeat)
            row += f"{seconds * 1000:12.0f}{heavy:>30}"
        print(row)


if __name__ == "__main__":
    main()
