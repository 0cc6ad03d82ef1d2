"""What starting ``lookout`` costs: each main command's wall time and import time, in one run.

Every command is started as the tests start it (``python -m device.cli ...``, offline,
the local model), ``--repeat`` times; the table gives the median wall time, the time
spent importing (``-X importtime``, one more start) and which heavy packages the command
loaded (google-genai, aiohttp, pydantic, matplotlib). ``--before`` measures an earlier
checkout the same way, in the same run, so the two columns share one machine's load.
``-X importtime`` times the import statements: a module loaded by ``importlib`` itself
(``live``'s names, on first use) is not timed, what it imports is.

    python scripts/bench/startup.py [--before PATH] [--repeat 5]

--before is a checkout of the earlier Lookout (``git worktree add /tmp/before <commit>``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe_cpu

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("google.genai", "aiohttp", "pydantic", "matplotlib")
# -X importtime: "import time: self [us] | cumulative | imported package"
IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+\d+\s+\|\s+(\S.*)$")


def commands(video: Path, work: Path) -> dict[str, list[str]]:
    """The commands timed, by the name the table gives them."""
    log = work / "events.jsonl"
    return {
        "--help": ["--help"],
        "run --help": ["run", "--help"],
        "run (local, 1 s)": [
            "run", "--model", "local", "--source", str(video), "--duration", "1",
            "--pace", "fast", "--no-http", "--events", str(log),
        ],
        "ask (local)": ["ask", "--model", "local", "--source", str(video), "how many people?"],
        "doctor (local)": ["doctor", "--model", "local", "--source", str(video)],
        "report": ["report", str(log), "--out", str(work / "report.html")],
    }  # fmt: skip


def offline_env() -> dict[str, str]:
    """This environment without Gemini keys, as the tests start the command."""
    hidden = {"GEMINI_API_KEY", "GOOGLE_API_KEY", "PYTHONPATH"}
    return {k: v for k, v in os.environ.items() if k not in hidden}


def start(tree: Path, args: list[str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *extra, "-m", "device.cli", *args],
        cwd=tree,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def measure(tree: Path, args: list[str], repeat: int) -> tuple[float, float, str]:
    """Median wall seconds, import seconds, and the heavy packages loaded."""
    times: list[float] = []
    for _ in range(repeat):
        began = time.perf_counter()
        done = start(tree, args)
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            sys.exit(f"{tree}: lookout {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    traced = start(tree, args, "-X", "importtime")
    imported_us = 0
    loaded: set[str] = set()
    for line in traced.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            imported_us += int(match.group(1))
            loaded.add(match.group(2).strip())
    heavy = ",".join(h for h in HEAVY if h in loaded) or "-"
    return statistics.median(times), imported_us / 1e6, heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    trees = {"now": ROOT}
    if args.before is not None:
        trees = {"before": args.before.resolve(), **trees}
    video = ROOT / "data" / "vtest.avi"
    if not video.exists():
        sys.exit(f"no sample video at {video}")
    print(describe_cpu())
    print(f"Python {sys.version.split()[0]}; median of {args.repeat} starts; imports: one more")
    columns = "".join(f"{name + ' wall':>13}{name + ' imports':>16}{'loads':>32}" for name in trees)
    header = f"{'command':18}" + columns
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        runs = {name: Path(tmp, name) for name in trees}
        for work in runs.values():
            work.mkdir()
        for label in commands(video, Path(tmp)):
            row = f"{label:18}"
            for name, tree in trees.items():
                # Each tree reports on the log its own run wrote.
                argv = commands(video, runs[name])[label]
                wall, imported, heavy = measure(tree, argv, args.repeat)
                row += f"{wall * 1000:10.0f} ms{imported * 1000:13.0f} ms{heavy:>32}"
            print(row, flush=True)


if __name__ == "__main__":
    main()
