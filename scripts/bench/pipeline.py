"""Benchmark the whole device pipeline: `lookout run --pace realtime` on the sample video.

Runs the real app in-process (real source, capture loop, session, count_people
with the ONNX detector, local model) for N seconds per detection rate and
prints CPU %, memory, per-stage times and the capture -> count-event latency.

    python scripts/bench/pipeline.py [--seconds 60] [--detect-fps 1,5] [--source data/vtest.avi]

Stages: read = source read() in its thread; encode = resize + JPEG; queue = frame
enqueued -> the tool takes it; detect = pre + inference + decode; emit = the tool
yields -> the emission reaches the model. Latency counts from the frame entering the
queue to the count event, for the frame that confirmed the change (the smoothing's
hold time, 1 s by default, comes on top by design and is not included).
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from device.app.config import build
from device.app.run import App, sample_video
from device.capture import EncodedFrame
from device.sources import Frame, FrameSource, open_source
from live.events import Emission, Event
from tools.count_people import CountChanged, FrameResult


class TimedSource:
    """Delegates to a real source and times each read."""

    def __init__(self, inner: FrameSource) -> None:
        self.inner = inner
        self.name = inner.name
        self.live = inner.live
        self.fps = inner.fps
        self.frame_count = getattr(inner, "frame_count", None)
        self.read_ms: list[float] = []

    def open(self) -> None:
        self.inner.open()

    def read(self) -> Frame | None:
        start = time.perf_counter()
        frame = self.inner.read()
        self.read_ms.append((time.perf_counter() - start) * 1000)
        return frame

    def seek(self, index: int) -> None:
        self.inner.seek(index)

    def close(self) -> None:
        self.inner.close()


class Probe:
    """Collects stage timings from the app's hooks."""

    def __init__(self) -> None:
        self.enqueued: dict[float, float] = {}
        self.detect_ms: list[float] = []
        self.queue_ms: list[float] = []
        self.emit_ms: list[float] = []
        self.latency_ms: list[float] = []
        self.detected_at: dict[float, float] = {}
        self.events: list[Event] = []

    def on_frame(self, frame: EncodedFrame) -> None:
        self.enqueued[frame.t] = time.perf_counter()

    def on_result(self, result: FrameResult) -> None:
        now = time.perf_counter()
        self.detect_ms.append(result.detect_ms)
        start = self.enqueued.get(result.t_media)
        if start is not None:
            self.queue_ms.append(max(0.0, (now - start) * 1000 - result.detect_ms))
        self.detected_at[result.t_media] = now

    def write(self, event: Event) -> None:
        now = time.perf_counter()
        if isinstance(event, CountChanged):
            start = self.enqueued.get(event.t_media)
            if start is not None:
                self.latency_ms.append((now - start) * 1000)
            self.last_count_t = event.t_media
        if isinstance(event, Emission) and "people" in event.payload:
            detected = self.detected_at.get(getattr(self, "last_count_t", -1.0))
            if detected is not None:
                self.emit_ms.append((now - detected) * 1000)

    def close(self) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_once(source_path: str, seconds: float, detect_fps: float) -> dict[str, Any]:
    config = build(
        {
            "source": source_path,
            "model": "local",
            "pace": "realtime",
            "loop": True,
            "duration": seconds,
            "detect_fps": detect_fps,
            "http": "",
        },
        environ={},
        system_config=Path("/nonexistent"),
    )
    probe = Probe()
    source = TimedSource(open_source(source_path, clock_now=time.monotonic))
    app = App(
        config,
        out=io.StringIO(),
        source_override=source,
        observers=[probe.on_result],
        frame_observers=[probe.on_frame],
        extra_sinks=[probe],
    )
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    code = await app.run()
    wall = time.perf_counter() - wall0
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    stats = app.capture.stats
    return {
        "detect_fps": detect_fps,
        "exit": code,
        "wall_s": wall,
        "cpu_pct": 100 * cpu / wall,
        "rss_peak_mb": rss_peak_mb(),
        "frames_read": stats.frames_read,
        "frames_sampled": stats.frames_sampled,
        "detected": len(probe.detect_ms),
        "read_ms": statistics.fmean(source.read_ms) if source.read_ms else float("nan"),
        "encode_ms": stats.encode_ms_mean,
        "queue_ms": statistics.fmean(probe.queue_ms) if probe.queue_ms else float("nan"),
        "detect_p50": pct(probe.detect_ms, 50),
        "detect_p95": pct(probe.detect_ms, 95),
        "emit_ms": statistics.fmean(probe.emit_ms) if probe.emit_ms else float("nan"),
        "latency_p50": pct(probe.latency_ms, 50),
        "latency_p95": pct(probe.latency_ms, 95),
        "changes": len(probe.latency_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--detect-fps", default="1,5")
    parser.add_argument("--source", default=None)
    args = parser.parse_args()
    video = args.source or str(sample_video() or "")
    if not video:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    rows = []
    for fps in [float(x) for x in args.detect_fps.split(",")]:
        rows.append(anyio.run(run_once, video, args.seconds, fps))
    header = (
        f"{'det fps':>7}{'CPU %':>7}{'RSS MB':>8}{'read':>7}{'sampled':>8}{'detected':>9}"
        f"{'read ms':>8}{'enc ms':>7}{'queue ms':>9}{'det p50':>8}{'det p95':>8}"
        f"{'emit ms':>8}{'lat p50':>8}{'lat p95':>8}{'changes':>8}"
    )
    print(f"lookout run --pace realtime --loop on {Path(video).name}, {args.seconds:g} s per row")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['detect_fps']:>7g}{r['cpu_pct']:>7.1f}{r['rss_peak_mb']:>8.1f}"
            f"{r['frames_read']:>7}{r['frames_sampled']:>8}{r['detected']:>9}"
            f"{r['read_ms']:>8.2f}{r['encode_ms']:>7.2f}{r['queue_ms']:>9.2f}"
            f"{r['detect_p50']:>8.1f}{r['detect_p95']:>8.1f}{r['emit_ms']:>8.2f}"
            f"{r['latency_p50']:>8.1f}{r['latency_p95']:>8.1f}{r['changes']:>8}"
        )
    print("ms are per frame (means, or p50/p95); latency: frame enqueued -> count event.")


if __name__ == "__main__":
    main()
