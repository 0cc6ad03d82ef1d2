"""Soak test: `lookout run --loop --pace fast` for a long time; resources must stay flat.

Runs the real app in-process (so it can count asyncio tasks) on the sample video,
looping, as fast as the pipeline goes, and samples RSS, open file descriptors,
threads and tasks every interval. Not a CI test: it takes 10 minutes by default.

    python scripts/bench/soak.py [--minutes 10] [--every 30]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import sys
import threading
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from device.app.config import build
from device.app.run import App, sample_video


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def soak(minutes: float, every: float) -> list[tuple[float, float, int, int, int, int]]:
    video = sample_video()
    if video is None:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    config = build(
        {
            "source": str(video),
            "model": "local",
            "pace": "fast",
            "loop": True,
            "duration": minutes * 60,
            "http": "",
        },
        environ={},
        system_config=Path("/nonexistent"),
    )
    app = App(config, out=io.StringIO())
    rows: list[tuple[float, float, int, int, int, int]] = []

    async def sample() -> None:
        start = time.monotonic()
        while True:
            rows.append(
                (
                    time.monotonic() - start,
                    rss_mb(),
                    open_fds(),
                    threading.active_count(),
                    len(asyncio.all_tasks()),
                    app.perception.stats.detected,
                )
            )
            await anyio.sleep(every)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        code = await app.run()
        tg.cancel_scope.cancel()
    print(f"exit code {code}; frames processed {app.perception.stats.detected}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=30.0)
    args = parser.parse_args()
    rows = anyio.run(soak, args.minutes, args.every)
    print(f"{'t s':>7}{'RSS MB':>9}{'fds':>6}{'threads':>9}{'tasks':>7}{'frames':>9}")
    for t, rss, fds, threads, tasks, frames in rows:
        print(f"{t:>7.0f}{rss:>9.1f}{fds:>6}{threads:>9}{tasks:>7}{frames:>9}")
    if len(rows) >= 3:
        # The first samples include model loading and warm-up; compare from the second.
        first, last = rows[1], rows[-1]
        print(
            f"from {first[0]:.0f}s to {last[0]:.0f}s: RSS {first[1]:.1f} -> {last[1]:.1f} MB, "
            f"fds {first[2]} -> {last[2]}, threads {first[3]} -> {last[3]}, "
            f"tasks {first[4]} -> {last[4]}"
        )


if __name__ == "__main__":
    main()
