"""Benchmark the motion gate: `lookout run` on a still scene and on the sample video, gate on/off.

Each row is a real `lookout run` process (the local model, the status server,
real-time replay of a 10 fps video with --loop, the default detection rate),
measured over a steady window after a warm-up: its CPU % (process CPU time
over wall time, every thread), the detector runs, the frames the gate held,
the frames skipped undecoded and the mean decode time of a frame read (from
its own /metrics, before and after the window).

The still scene is the sample video without its people: the per-pixel
median of many of its frames (the empty plaza), written as a video with the
sample's own codec, so both scenes cost the same to read.

    python scripts/bench/motion.py [--seconds 60] [--warmup 10] [--scenes sample,still]
        [--motion off,on] [--detect-fps N]

Goal (issue 16): the still scene with the gate costs at most 0.35x the sample video's CPU.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.app.parts import sample_video

GOAL = 0.35
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def empty_plaza(video: Path, every: int = 8) -> np.ndarray:
    """The per-pixel median of every ``every``-th frame: the scene without its people."""
    cap = cv2.VideoCapture(str(video))
    frames = []
    index = 0
    while True:
        ok, image = cap.read()
        if not ok:
            break
        if index % every == 0:
            frames.append(image)
        index += 1
    cap.release()
    return np.asarray(np.median(np.stack(frames), axis=0), np.uint8)


def write_still(path: Path, image: np.ndarray, seconds: float, like: Path) -> Path:
    """``seconds`` of ``image`` at the sample's frame rate, in its codec when it can be written."""
    cap = cv2.VideoCapture(str(like))
    fps = cap.get(cv2.CAP_PROP_FPS) or 10.0
    code = int(cap.get(cv2.CAP_PROP_FOURCC))
    cap.release()
    size = (image.shape[1], image.shape[0])
    fourccs = ["".join(chr((code >> (8 * i)) & 0xFF) for i in range(4)), "XVID", "MJPG"]
    for fourcc in fourccs:
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*fourcc), fps, size)
        if writer.isOpened():
            for _ in range(round(seconds * fps)):
                writer.write(image)
            writer.release()
            return path
    sys.exit(f"cannot write a video with any of {fourccs}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    values: dict[str, float] = {}
    # A camera's series are labelled with it (one camera here); a series with other labels
    # is left out.
    for found in re.finditer(r'^(\w+)(?:\{camera="[^"]*"\})? (\S+)$', text, re.M):
        name, value = found.groups()
        values[name] = values.get(name, 0.0) + float(value)
    return values


def run_one(
    source: Path, motion: str, seconds: float, warmup: float, detect_fps: float | None
) -> dict[str, float]:
    flags = ["--motion", motion]
    if detect_fps is not None:
        flags += ["--detect-fps", f"{detect_fps:g}"]
    lookout = [str(Path(sys.executable).with_name("lookout"))]
    return run_command(lookout, None, source, flags, seconds, warmup)


def run_command(
    launcher: list[str],
    cwd: Path | None,
    source: Path,
    flags: list[str],
    seconds: float,
    warmup: float,
) -> dict[str, float]:
    """One ``lookout run`` (``launcher`` is how to start lookout; ``cwd`` where) on
    ``source`` with ``flags``, measured over ``seconds`` after ``warmup``."""
    port = free_port()
    command = [*launcher, "run", "--source", str(source), "--loop", "--model", "local"]
    command += ["--pace", "realtime", "--http", f"127.0.0.1:{port}", *flags]
    env = dict(os.environ)
    if cwd is not None:  # another checkout: its own packages first
        env["PYTHONPATH"] = str(cwd)
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # up once the detector is loaded and the page serves
            try:
                scrape(port)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read().decode() if process.stderr else ""
                    sys.exit(f"lookout run did not come up: {err.strip()[-500:]}")
                time.sleep(0.5)
        time.sleep(warmup)
        before, cpu0, wall0 = scrape(port), cpu_seconds(process.pid), time.monotonic()
        time.sleep(seconds)
        after, cpu1, wall1 = scrape(port), cpu_seconds(process.pid), time.monotonic()
        rss = rss_mb(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    wall = wall1 - wall0
    return {
        "cpu_pct": 100 * (cpu1 - cpu0) / wall,
        "wall": wall,
        "read": delta("lookout_frames_read_total"),
        "undecoded": delta("lookout_frames_undecoded_total"),
        "sampled": delta("lookout_frames_sampled_total"),
        "detected": delta("lookout_frames_detected_total"),
        "gated": delta("lookout_frames_gated_total"),
        "decode_ms": 1000 * after.get("lookout_decode_seconds_mean", float("nan")),
        "rss_mb": rss,
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="steady window per row")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before the window")
    parser.add_argument("--scenes", default="sample,still")
    parser.add_argument("--motion", default="off,on")
    parser.add_argument("--detect-fps", type=float, default=None)
    args = parser.parse_args()
    print(describe_cpu())
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    rows: list[tuple[str, str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        still = write_still(Path(tmp) / "plaza.avi", empty_plaza(video), 30.0, video)
        sources = {"sample": Path(video), "still": still}
        for scene in args.scenes.split(","):
            for motion in args.motion.split(","):
                row = run_one(sources[scene], motion, args.seconds, args.warmup, args.detect_fps)
                rows.append((scene, motion, row))
                print(f"  {scene} motion {motion}: {row['cpu_pct']:.1f} % CPU", file=sys.stderr)
    rate = f"--detect-fps {args.detect_fps:g}" if args.detect_fps else "the default detect rate"
    print(
        f"lookout run --pace realtime --loop, 10 fps video, {rate}; steady {args.seconds:g} s "
        f"after {args.warmup:g} s; {os.cpu_count()} CPUs"
    )
    header = (
        f"{'scene':>7}{'motion':>7}{'CPU %':>7}{'read':>6}{'undec':>6}{'sampled':>8}"
        f"{'det runs':>9}{'det/s':>6}{'gated':>6}{'dec ms':>7}{'RSS MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for scene, motion, r in rows:
        print(
            f"{scene:>7}{motion:>7}{r['cpu_pct']:>7.1f}{r['read']:>6.0f}{r['undecoded']:>6.0f}"
            f"{r['sampled']:>8.0f}{r['detected']:>9.0f}{r['detected'] / r['wall']:>6.2f}"
            f"{r['gated']:>6.0f}{r['decode_ms']:>7.2f}{r['rss_mb']:>7.0f}"
        )
    cpu = {(scene, motion): r["cpu_pct"] for scene, motion, r in rows}
    if ("still", "on") in cpu and ("sample", "on") in cpu:
        ratio = cpu[("still", "on")] / cpu[("sample", "on")]
        verdict = "meets" if ratio <= GOAL else "misses"
        print(f"still / sample CPU with the gate: {ratio:.2f}x ({verdict} the {GOAL}x goal)")
    print(
        "read: frames read from the source (undec: of them, skipped without decoding); "
        "det runs: detector runs in the window; gated: frames on the detection grid held "
        "because nothing moved; dec ms: mean decode time of a frame read (the run's)."
    )


if __name__ == "__main__":
    main()
