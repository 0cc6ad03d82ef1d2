"""Benchmark the live runtime's input path with the recording model.

A 30 fps frame source feeds one input-consuming streaming tool whose
"detector" blocks a worker thread for 0, 10 or 50 ms per frame; the tool
reports every frame it processed. Measured: frames the tool saw and dropped,
its input queue depth, the latency from frame enqueue to the emission
arriving at the model (p50/p95/max), and memory. A burst of 5,000 frames
sent as fast as the loop allows shows the queue cannot grow.

    python scripts/bench/runtime.py [--seconds 10] [--fps 30] [--delays 0,10,50] [--burst 5000]
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from google.genai import types

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anyio.lowlevel
from machine import describe_cpu

from live.config import SessionConfig
from live.input_stream import InputStream
from live.requests import LiveRequestQueue
from live.session import Runner
from live.testing import ScriptedModel, Sent
from tools.function_tool import FunctionTool


def rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sample_jpeg() -> bytes:
    try:
        import cv2
        import numpy as np

        rng = np.random.default_rng(0)
        image = rng.integers(0, 255, (576, 768, 3), dtype=np.uint8)
        image = cv2.GaussianBlur(image, (31, 31), 0)
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
        if ok:
            return bytes(data)
    except ImportError:
        pass
    return b"\xff\xd8" + bytes(40_000)


@dataclass
class Result:
    label: str
    sent: int
    seen: int
    dropped: int
    depth_max: int
    emissions: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    rss_start: float
    rss_peak: float
    wall_s: float


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    index = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[index]


async def run_case(label: str, delay_s: float, *, fps: float, seconds: float, burst: int) -> Result:
    payload = sample_jpeg()
    model = ScriptedModel(keep_frames=False)
    enqueued: dict[int, float] = {}
    latencies: list[float] = []

    def on_send(item: Sent) -> None:
        for response in getattr(item.message, "responses", ()):
            frame_id = (response.response or {}).get("frame_id")
            if frame_id is not None:
                latencies.append(item.t - enqueued[frame_id])

    model.on_send = on_send

    async def detector(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
        """Pretend detector: blocks a worker thread for the configured time."""
        async for request in stream:
            assert request.blob is not None and request.blob.data is not None
            frame_id = struct.unpack(">Q", request.blob.data[:8])[0]
            if delay_s > 0:
                await anyio.to_thread.run_sync(time.sleep, delay_s)
            yield {"frame_id": frame_id}

    queue = LiveRequestQueue()
    runner = Runner(model, [FunctionTool(detector)], SessionConfig())
    rss_start = rss_mb()
    rss_peak = rss_start
    sent = 0
    t0 = time.monotonic()
    async with runner.run_live(queue) as session:
        await session.wait_model_connected()  # the session no longer waits for it itself
        call_id = model.call("detector")
        await model.wait_for(lambda: model.responses(call_id))
        await anyio.sleep(0.05)
        stream = next(iter(session.input_streams().values()))
        start = time.monotonic()
        total = burst if burst else int(seconds * fps)
        for i in range(total):
            if not burst:
                await anyio.sleep(max(0.0, start + i / fps - time.monotonic()))
            blob = types.Blob(data=struct.pack(">Q", i) + payload, mime_type="image/jpeg")
            enqueued[i] = time.monotonic()
            queue.send_realtime(blob)
            sent += 1
            if burst:
                await anyio.lowlevel.checkpoint()
            if i % 30 == 0:
                rss_peak = max(rss_peak, rss_mb())
        await anyio.sleep(delay_s * 3 + 0.05)
        rss_peak = max(rss_peak, rss_mb())
        stats = stream.stats
        queue.close()
    wall = time.monotonic() - t0
    return Result(
        label=label,
        sent=sent,
        seen=stats.delivered,
        dropped=stats.dropped + queue.stats.realtime_dropped,
        depth_max=stats.max_depth,
        emissions=len(latencies),
        p50_ms=percentile(latencies, 50) * 1000,
        p95_ms=percentile(latencies, 95) * 1000,
        max_ms=max(latencies, default=float("nan")) * 1000,
        rss_start=rss_start,
        rss_peak=rss_peak,
        wall_s=wall,
    )


def print_table(results: list[Result]) -> None:
    header = (
        f"{'case':<26}{'sent':>7}{'seen':>7}{'dropped':>9}{'depth max':>10}"
        f"{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'RSS MB':>9}{'+RSS MB':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.label:<26}{r.sent:>7}{r.seen:>7}{r.dropped:>9}{r.depth_max:>10}"
            f"{r.p50_ms:>9.2f}{r.p95_ms:>9.2f}{r.max_ms:>9.2f}{r.rss_peak:>9.1f}"
            f"{r.rss_peak - r.rss_start:>9.1f}"
        )


async def main_async(args: argparse.Namespace) -> None:
    delays = [float(d) for d in args.delays.split(",") if d.strip()]
    results = []
    for delay_ms in delays:
        label = f"{args.fps:g} fps, detector {delay_ms:g} ms"
        results.append(
            await run_case(label, delay_ms / 1000, fps=args.fps, seconds=args.seconds, burst=0)
        )
    if args.burst:
        for delay_ms in (0.0, 50.0):
            label = f"burst {args.burst}, det {delay_ms:g} ms"
            results.append(
                await run_case(label, delay_ms / 1000, fps=args.fps, seconds=0, burst=args.burst)
            )
    print_table(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--delays", default="0,10,50")
    parser.add_argument("--burst", type=int, default=5000)
    args = parser.parse_args()
    print(describe_cpu())
    anyio.run(main_async, args)


if __name__ == "__main__":
    main()
