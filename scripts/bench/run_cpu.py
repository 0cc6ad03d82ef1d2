"""Benchmark `lookout run` at its defaults: this tree against an earlier checkout, in one run.

Each row is a real `lookout run` process on the sample video (the local model, the status
server, real-time replay with --loop, nothing else set), measured as in motion.py: the
process CPU over a steady window after a warm-up, the detector runs and the mean decode
time from its own /metrics. The rows take turns round by round (before, now, now with each
extra setting, then again), so what else the machine does weighs on all of them alike.

    python scripts/bench/run_cpu.py --before PATH [--seconds 60] [--warmup 10] [--rounds 2]
        [--variant "int8=--precision int8"] ...

--before is a checkout of the earlier Lookout (e.g. ``git worktree add /tmp/before <commit>``);
it runs with this interpreter and its own models/. Without it only this tree's rows run.

Goal (issue 16): at defaults, steady CPU on the sample video at most 0.6x the earlier one.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu
from motion import run_command

from device.app.parts import sample_video

GOAL = 0.6


def git(path: Path, *args: str) -> str:
    """The output of a git command in the checkout at ``path`` ("" if it fails)."""
    proc = subprocess.run(
        ["git", "-C", str(path), *args], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip()


def checkout_commit(path: Path) -> str:
    return git(path, "log", "-1", "--format=%h") or "?"


def dirty(path: Path) -> str:
    """ " + changes" when the checkout has uncommitted changes to tracked files."""
    return " + changes" if git(path, "status", "--porcelain", "--untracked-files=no") else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="an earlier checkout")
    parser.add_argument("--seconds", type=float, default=60.0, help="steady window per row")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the window")
    parser.add_argument("--rounds", type=int, default=2, help="times each row runs")
    parser.add_argument(
        "--common",
        default="",
        metavar="ARGS",
        help='flags for every row, before included, e.g. "--line post=0.56,0.73,0.56,0.21"',
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=ARGS",
        help='an extra row of this tree with these flags, e.g. "fp32=--precision fp32"',
    )
    args = parser.parse_args()
    print(describe_cpu())
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    here = Path(__file__).resolve().parents[2]
    lookout = [str(Path(sys.executable).with_name("lookout"))]
    rows: list[tuple[str, list[str], Path | None, list[str]]] = []
    if args.before is not None:
        before = args.before.resolve()
        if not (before / "device" / "cli.py").is_file():
            sys.exit(f"{before} is not a Lookout checkout (no device/cli.py)")
        launcher = [
            sys.executable,
            "-c",
            "import sys; from device.cli import main; sys.exit(main())",
        ]
        rows.append((f"before ({checkout_commit(before)})", launcher, before, []))
    rows.append((f"now ({checkout_commit(here)}{dirty(here)})", lookout, None, []))
    for spec in args.variant:
        name, _, flags = spec.partition("=")
        rows.append((f"now, {name}", lookout, None, shlex.split(flags)))

    results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in rows}
    for k in range(args.rounds):
        for name, launcher, cwd, flags in rows:
            every = shlex.split(args.common) + flags
            result = run_command(launcher, cwd, Path(video), every, args.seconds, args.warmup)
            results[name].append(result)
            print(f"  round {k + 1} {name}: {result['cpu_pct']:.1f} % CPU", file=sys.stderr)

    print(
        f"lookout run --source {Path(video).name} --loop --model local --pace realtime "
        f"{args.common or 'at its defaults'}; steady {args.seconds:g} s after "
        f"{args.warmup:g} s, {args.rounds} rounds "
        f"taking turns; {os.cpu_count()} CPUs"
    )
    header = f"{'run':<28}{'CPU % per round':>22}{'mean':>7}{'det/s':>7}{'dec ms':>7}{'ratio':>7}"
    print(header)
    print("-" * len(header))
    first = None
    for name, *_ in rows:
        rs = results[name]
        mean = sum(r["cpu_pct"] for r in rs) / len(rs)
        first = mean if first is None else first
        det_s = sum(r["detected"] / r["wall"] for r in rs) / len(rs)
        dec = sum(r["decode_ms"] for r in rs) / len(rs)
        per_round = " / ".join(f"{r['cpu_pct']:.1f}" for r in rs)
        print(f"{name:<28}{per_round:>22}{mean:>7.1f}{det_s:>7.2f}{dec:>7.2f}{mean / first:>6.2f}x")
    print("ratio: mean CPU over the first row's; det/s: detector runs a second; dec ms: mean")
    goal = "" if args.common else f" Goal (issue 16, at defaults): <= {GOAL}x"
    print(f"decode time of a frame read (nan where that run's /metrics lacks it).{goal}")


if __name__ == "__main__":
    main()
