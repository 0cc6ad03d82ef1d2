"""Benchmark the whole device pipeline: `lookout run --pace realtime` on the sample video.

Runs the real app in-process (real source, capture loop, perception with the
ONNX detector, session, count_people, local model) for N seconds per detection
rate and prints CPU %, memory, per-stage times, the read -> count-event
latency, and how often the detector ran for how many consumers of each frame.

    python scripts/bench/pipeline.py [--seconds 60] [--detect-fps 1,5] [--extra-streams 0,2]
        [--scene none,line+zone]

Stages: read = source read() in its thread; detect = pre + inference + decode;
emit = the count event -> the emission reaching the model. Latency counts from
the frame entering the pipeline when due to the count event, for the frame that
made the change (the count follows the tracker at that frame: no hold comes on top).
``--extra-streams N`` starts N more count_people streams as
device calls beside the model's own: every one of them consumes every percept,
and the detector must still run once per sampled frame. ``--scene line+zone``
adds the lamp-post line and a zone (``SCENE``): the local model then also
watches both, and the detector and the tracker must still run once per
sampled frame (``det runs``, ``trk runs``); ``trk ms`` is the tracker, lines and
zones per detected frame.
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.app.parts import sample_video
from device.app.wiring import build_app
from device.bus import EventBus
from device.config import build
from device.events import CountChanged
from device.sources import FrameSource, open_source
from device.vision.frame import Frame
from device.vision.percept import Percept
from device.vision.shared_detector import SharedDetector
from live.events import Emission, Event
from live.util.clock import MonotonicClock
from models.detections import Detections
from models.detector import PersonDetector


class TimedSource:
    """Delegates to a real source and times each read."""

    def __init__(self, inner: FrameSource) -> None:
        self.inner = inner
        self.name = inner.name
        self.is_camera = inner.is_camera
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


class TimedPerceive:
    """Wraps the capture loop's hand-over to perception: when each frame went in.

    That is the moment a frame enters the pipeline once it is due (a file replayed in
    real time is read ahead and waits for its time first), as a camera frame would.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.arrived: dict[float, float] = {}  # t_media (loop passes included) -> time

    async def __call__(self, frame: Frame) -> Percept | None:
        self.arrived[round(frame.t_media, 3)] = time.perf_counter()
        result: Percept | None = await self.inner(frame)
        return result


class CountingDetector:
    def __init__(self, threshold: float) -> None:
        self.inner = PersonDetector(threshold=threshold)
        self.calls = 0
        self._lock = threading.Lock()

    def detect(self, frame_bgr: np.ndarray) -> Detections:
        with self._lock:
            self.calls += 1
        return self.inner.detect(frame_bgr)


class Probe:
    """A bus subscriber collecting stage timings."""

    def __init__(self, feed: TimedPerceive) -> None:
        self.feed = feed
        self.detect_ms: list[float] = []
        self.latency_ms: list[float] = []
        self.emit_ms: list[float] = []
        self.percepts = 0
        self._last_change_at: float | None = None

    def on_percept(self, percept: Percept) -> None:
        self.percepts += 1
        if percept.error is None:
            self.detect_ms.append(percept.detect_ms)

    def write(self, event: Event) -> None:
        now = time.perf_counter()
        if isinstance(event, CountChanged) and event.t_media is not None:
            read = self.feed.arrived.get(round(event.t_media, 3))
            if read is not None:
                self.latency_ms.append((now - read) * 1000)
            self._last_change_at = now
        if (
            isinstance(event, Emission)
            and event.to_model
            and "people" in event.payload
            and "zone" not in event.payload  # watch_zone says people too, not count changes
            and self._last_change_at is not None
        ):
            self.emit_ms.append((now - self._last_change_at) * 1000)

    def close(self) -> None:
        pass


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


SCENE = {
    "lines": ["post=0.5599,0.7292,0.5599,0.2083"],
    "zones": ["left=0.05,0.3,0.45,0.3,0.45,0.95,0.05,0.95"],
}


async def run_once(
    source_path: str, seconds: float, detect_fps: float, extra_streams: int, scene: str
) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "source": source_path,
        "model": "local",
        "pace": "realtime",
        "loop": True,
        "duration": seconds,
        "detect_fps": detect_fps,
        "http": "",
    }
    if scene != "none":
        flags |= SCENE
    config = build(flags, environ={}, system_config=Path("/nonexistent"))
    source = TimedSource(open_source(source_path, clock_now=time.monotonic))
    clock = MonotonicClock()
    bus = EventBus(clock)
    app = build_app(
        config, operations=False, bus=bus, out=io.StringIO(), clock=clock, source=source
    )
    feed = TimedPerceive(app.capture.perceive)
    app.capture.perceive = feed
    probe = Probe(feed)
    bus.subscribe(probe)
    bus.on_percept(probe.on_percept)
    detector = CountingDetector(threshold=0.2)  # as the app's: doubtful boxes keep tracks
    app.perception.shared = SharedDetector(detector)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()

    model_stream = anyio.Event()

    class StartedHook:
        def write(self, event: Event) -> None:
            if event.type == "stream_started":
                model_stream.set()

        def close(self) -> None:
            pass

    bus.subscribe(StartedHook())

    async def extra() -> None:
        await model_stream.wait()  # the extra consumers join the model's own stream
        assert app.session is not None
        for _ in range(extra_streams):
            await app.session.call_tool("count_people")

    async with anyio.create_task_group() as tg:
        tg.start_soon(extra)
        code = await app.run()
        tg.cancel_scope.cancel()
    wall = time.perf_counter() - wall0
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    stats = app.capture.stats
    return {
        "detect_fps": detect_fps,
        "scene": scene,
        "tracker_runs": app.perception.tracker.stats.updates,
        "track_ms": app.perception.stats.track_ms_mean,
        "streams": 1 + extra_streams + (len(config.scene.lines) + len(config.scene.zones)),
        "exit": code,
        "wall_s": wall,
        "cpu_pct": 100 * cpu / wall,
        "cpu_ms_per_det": 1000 * cpu / max(1, detector.calls),
        "rss_peak_mb": rss_peak_mb(),
        "frames_read": stats.frames_read,
        "frames_sampled": stats.frames_sampled,
        "detector_calls": detector.calls,
        "percepts": probe.percepts,
        "read_ms": statistics.fmean(source.read_ms) if source.read_ms else float("nan"),
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
    parser.add_argument("--extra-streams", default="0", help="comma list, e.g. 0,2")
    parser.add_argument("--source", default=None)
    parser.add_argument("--scene", default="none", help="comma list of none, line+zone")
    args = parser.parse_args()
    print(describe_cpu())
    video = args.source or str(sample_video() or "")
    if not video:
        sys.exit("sample video not found: run python3 scripts/fetch_sample_data.py")
    rows = []
    for fps in [float(x) for x in args.detect_fps.split(",")]:
        for extra in [int(x) for x in args.extra_streams.split(",")]:
            for scene in args.scene.split(","):
                rows.append(anyio.run(run_once, video, args.seconds, fps, extra, scene))
    header = (
        f"{'det fps':>7}{'scene':>11}{'streams':>8}{'CPU %':>7}{'trk runs':>9}{'trk ms':>7}"
        f"{'ms/det':>7}{'RSS MB':>8}{'read':>7}"
        f"{'sampled':>8}{'det runs':>9}{'percepts':>9}{'read ms':>8}{'det p50':>8}"
        f"{'det p95':>8}{'emit ms':>8}{'lat p50':>8}{'lat p95':>8}{'changes':>8}"
    )
    print(f"lookout run --pace realtime --loop on {Path(video).name}, {args.seconds:g} s per row")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['detect_fps']:>7g}{r['scene']:>11}{r['streams']:>8}{r['cpu_pct']:>7.1f}"
            f"{r['tracker_runs']:>9}{r['track_ms']:>7.2f}"
            f"{r['cpu_ms_per_det']:>7.1f}{r['rss_peak_mb']:>8.1f}"
            f"{r['frames_read']:>7}{r['frames_sampled']:>8}{r['detector_calls']:>9}"
            f"{r['percepts']:>9}{r['read_ms']:>8.2f}"
            f"{r['detect_p50']:>8.1f}{r['detect_p95']:>8.1f}{r['emit_ms']:>8.2f}"
            f"{r['latency_p50']:>8.1f}{r['latency_p95']:>8.1f}{r['changes']:>8}"
        )
    print(
        "streams: tool streams consuming every percept (count_people: the model's + device "
        "calls; watch_line/watch_zone with a scene); trk runs: tracker updates; trk ms: "
        "tracker + lines + zones per detection; "
        "det runs: detector calls (one per sampled frame, whatever the streams); ms/det: "
        "process CPU per detection; latency: frame due (handed to perception) -> count event."
    )


if __name__ == "__main__":
    main()
