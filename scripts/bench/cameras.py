"""Several cameras in one process against one process per camera, and fairness under overload.

    python scripts/bench/cameras.py [--seconds 20] [--cameras 1,2,4] [--overload-fps 10]

Each row runs the real ``lookout run`` (the local model, no page) on N cameras replayed
in real time: the sample video and a mirrored copy of it (another scene, the same
people), taking turns, each with the lamp-post line (5 detections a second due per
camera). ``one process``: a single ``lookout run --source c0=... --source c1=...``;
``N processes``: N ``lookout run`` of one camera each, side by side. Measured from the
processes themselves: peak RSS (``ru_maxrss`` from ``wait4``; summed over the N
processes), CPU time (user + system), and each camera's detections (the run's own
closing line). ``overload``: 4 cameras at ``--overload-fps`` detections a second each,
more than this CPU can run: how the one detector shares itself (the lowest camera's
detections against the highest's) and what the device says about it.

Goal (issue 34): at N = 4 one process takes at most 0.6x the memory of four, at the same
CPU per detection.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from tests.cli import LOOKOUT, offline_env
from tests.clips import write_clip
from tests.datafiles import REPO_ROOT, data_file
from tests.detection_cache import ENV as DETECTIONS_ENV

POST = "0.5599,0.7292,0.5599,0.2083"
REPLAYED = re.compile(r"(?:(\w[\w-]*): )?replayed .* the detector ran on ([\d,]+)")
BEHIND = re.compile(r"the detector keeps up with")


@dataclass
class Measured:
    rss_mb: float = 0.0  # summed over the processes
    cpu_s: float = 0.0
    detections: dict[str, int] = field(default_factory=dict)
    said_behind: int = 0

    @property
    def per_detection_ms(self) -> float:
        total = sum(self.detections.values())
        return 1000 * self.cpu_s / total if total else float("nan")


def clips(folder: Path, seconds: float) -> list[Path]:
    mirrored = write_clip(folder / "mirrored.avi", min(79.0, seconds + 1), mirrored=True)
    return [data_file("vtest.avi"), mirrored]


def command(cameras: dict[str, Path], seconds: float, detect_fps: float | None) -> list[str]:
    args = [*LOOKOUT, "run", "--model", "local", "--no-http", "--pace", "realtime"]
    args += ["--duration", f"{seconds:g}", "--config", os.devnull]
    for name, clip in cameras.items():
        source = f"{name}={clip}" if len(cameras) > 1 else str(clip)
        line = f"{name}:post={POST}" if len(cameras) > 1 else f"post={POST}"
        args += ["--source", source, "--line", line]
    if detect_fps is not None:
        args += ["--detect-fps", f"{detect_fps:g}"]
    return args


def run_all(commands: list[list[str]], names: list[list[str]]) -> Measured:
    """The commands side by side; their peak RSS and CPU from wait4, and each camera's
    detections from its closing line."""
    env = {k: v for k, v in offline_env().items() if k != DETECTIONS_ENV}  # the real cost
    # Into files, not pipes: a process must never wait for this one to read its output.
    outputs = [tempfile.TemporaryFile("w+") for _ in commands]  # noqa: SIM115 (closed below)
    procs = [
        subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        for cmd, out in zip(commands, outputs, strict=True)
    ]
    measured = Measured()
    for proc, cameras, output in zip(procs, names, outputs, strict=True):
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        out = output.read()
        output.close()
        if proc.returncode != 0:
            raise SystemExit(f"lookout exited {proc.returncode}:\n{out[-3000:]}")
        measured.rss_mb += usage.ru_maxrss / 1024
        measured.cpu_s += usage.ru_utime + usage.ru_stime
        measured.said_behind += len(BEHIND.findall(out))
        for match in REPLAYED.finditer(out):
            name = match.group(1) or cameras[0]
            measured.detections[name] = int(match.group(2).replace(",", ""))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--cameras", default="1,2,4")
    parser.add_argument("--overload-fps", type=float, default=10.0)
    args = parser.parse_args()
    print(describe_cpu())
    with tempfile.TemporaryDirectory() as folder:
        videos = clips(Path(folder), args.seconds)
        print(
            f"{args.seconds:g} s of media per camera in real time (vtest.avi and a mirrored "
            "copy, in turns), the lamp-post line on each, 5 detections/s due per camera"
        )
        header = (
            f"{'N':>2} {'how':<12} {'RSS MB':>7} {'MB/cam':>7} {'CPU s':>6} "
            f"{'det/cam':>8} {'CPU ms/det':>10} {'RSS vs N proc':>13}"
        )
        print(header)
        print("-" * len(header))
        for n in (int(x) for x in args.cameras.split(",")):
            cams = {f"c{i}": videos[i % 2] for i in range(n)}
            one = run_all([command(cams, args.seconds, None)], [list(cams)])
            apart = run_all(
                [command({name: clip}, args.seconds, None) for name, clip in cams.items()],
                [[name] for name in cams],
            )
            for how, m in (("one process", one), (f"{n} processes", apart)):
                per_cam = sum(m.detections.values()) / n
                ratio = f"{one.rss_mb / apart.rss_mb:12.2f}x" if how == "one process" else ""
                print(
                    f"{n:>2} {how:<12} {m.rss_mb:7.0f} {m.rss_mb / n:7.0f} {m.cpu_s:6.1f} "
                    f"{per_cam:8.1f} {m.per_detection_ms:10.1f} {ratio:>13}",
                    flush=True,
                )
        cams = {f"c{i}": videos[i % 2] for i in range(4)}
        started = time.monotonic()
        over = run_all([command(cams, args.seconds, args.overload_fps)], [list(cams)])
        wall = time.monotonic() - started
        counts = [over.detections.get(name, 0) for name in cams]
        due = args.overload_fps * args.seconds
        print(
            f"\noverload: 4 cameras at {args.overload_fps:g} detections/s each "
            f"({4 * args.overload_fps:g}/s asked, {due:.0f} due per camera) in one process, "
            f"{wall:.0f} s wall"
        )
        print(
            "detections per camera: "
            + ", ".join(f"{n}" for n in counts)
            + f"; lowest/highest {min(counts) / max(counts):.2f}; "
            f"{sum(counts) / args.seconds:.1f} detections/s in all; "
            f"'the detector keeps up with ...' said {over.said_behind} times"
        )


if __name__ == "__main__":
    main()
