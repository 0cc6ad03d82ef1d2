"""Side-by-side benchmark: Lookout's live runtime against ADK Python's streaming tools.

Part 1 (runtime): the same driver (scripts/bench/adk_side.py: ``Case``, ``Probe``,
``count_frames``, ``drive``) feeds both runtimes the same frames (8-byte big-endian
frame id + one real 768x576 JPEG from the sample video) at 30 fps, or as a burst, into
one input-consuming streaming tool ``count_people`` whose pretend detector blocks a
worker thread for 0/10/50/100 ms and answers every frame with its id. Each runtime
talks to a recording fake live model. Every case runs in a fresh process per runtime:
Lookout in Lookout's venv, ADK 2.13.0 in a separate benchmark venv that this script
creates on demand (never a project dependency).

Part 2 (detector path, Lookout's venv only): the sample video's frames at 10 fps
through a LiveRequestQueue into the real ``count_people`` (NanoDet via
PersonDetector) in a Runner with the scripted model, against a naive loop that
decodes every JPEG and runs NanoDet on every frame.

    .venv/bin/python scripts/bench/vs_adk.py            # full run (~10 min on 2 cores)
    .venv/bin/python scripts/bench/vs_adk.py --quick    # ~1 min smoke run

Options: --seconds, --fps, --delays, --burst, --burst-delays, --drain, --e2e-seconds,
--e2e-detect-fps, --skip-e2e, --repeat, --adk-venv PATH, --lookout-python PATH, --json PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo: live, tools, models
sys.path.insert(0, str(Path(__file__).resolve().parent))  # adk_side, the shared driver

from adk_side import (
    CALL_ID,
    FRAME_MIME,
    TOOL_NAME,
    Case,
    Probe,
    count_frames,
    drive,
    others_cores,
    peak_rss_mb,
    percentile,
    system_busy_s,
)
from machine import describe_cpu

if TYPE_CHECKING:
    import numpy as np

    from live.input_stream import InputStream
    from live.testing import Sent

REPO = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent
ADK_REQUIREMENT = "google-adk==2.13.0"
ADK_VERSION = ADK_REQUIREMENT.split("==")[1]
DEFAULT_ADK_VENV = REPO / ".bench-venvs" / "adk"
RESULT_PREFIX = "RESULT "

FULL = {
    "seconds": 30.0,
    "delays": "0,10,50,100",
    "burst": 5000,
    "burst_delays": "0,50",
    "drain": 2.0,
    "e2e_seconds": 0.0,  # 0 = the whole sample video (79.5 s)
}
QUICK = {
    "seconds": 5.0,
    "delays": "0,50",
    "burst": 1000,
    "burst_delays": "0",
    "drain": 1.0,
    "e2e_seconds": 10.0,
}


# ------------------------------------------------------------------ Lookout half


class LookoutRuntime:
    """Lookout's Runner with the scripted recording model, behind adk_side's ``Runtime``."""

    def __init__(self, probe: Probe, *, send_frames: bool = False) -> None:
        from google.genai import types

        from live.config import SessionConfig
        from live.requests import LiveRequestQueue
        from live.session import Runner
        from live.testing import ScriptedModel
        from tools.function_tool import FunctionTool

        self._types = types
        self.probe = probe
        # keep_frames=False: the fake model only counts frames, as the ADK fake does.
        self.model = ScriptedModel(keep_frames=False)
        self.model.on_send = self._on_send
        self.queue = LiveRequestQueue()

        async def count_people(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
            """Count the people in view and report each processed frame."""

            async def items() -> AsyncIterator[bytes | None]:
                async for request in stream:
                    yield request.blob.data if request.blob is not None else None

            async for result in count_frames(probe, items()):
                yield result

        config = SessionConfig(send_frames=send_frames)
        self.runner = Runner(self.model, [FunctionTool(count_people, name=TOOL_NAME)], config)
        self._stack = contextlib.AsyncExitStack()
        self._stream: InputStream | None = None
        self._events_task: asyncio.Task[None] | None = None
        self.events = 0

    def _on_send(self, item: Sent) -> None:
        self.probe.messages_to_model += 1
        for response in getattr(item.message, "responses", ()):
            frame_id = (response.response or {}).get("frame_id")
            if frame_id is not None:
                self.probe.result_at_model(int(frame_id), item.t)

    async def _consume_events(self, session: Any) -> None:
        # The app reads its events (ADK's caller must, or run_live stalls), so do it here too.
        async for _event in session:
            self.events += 1

    async def start(self) -> None:
        session = await self._stack.enter_async_context(self.runner.run_live(self.queue))
        self._events_task = asyncio.create_task(self._consume_events(session))
        await session.wait_model_connected()  # the session no longer waits for it itself
        call_id = self.model.call(TOOL_NAME, id=CALL_ID)
        await self.model.wait_for(lambda: self.model.responses(call_id), timeout=30)
        self._stream = session.input_streams()[call_id]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self._stream.wait_idle()
        await asyncio.sleep(0.05)  # the same settling pause as the ADK side

    def send_frame(self, data: bytes) -> None:
        self.queue.send_realtime(self._types.Blob(data=data, mime_type=FRAME_MIME))

    def backlog(self) -> int:
        return self._stream.depth if self._stream is not None else 0

    def upstream(self) -> int:
        # Private lanes: the queue has no public length, and this is a benchmark.
        return self.queue._realtime.depth + len(self.queue._content)

    def dropped(self) -> int:
        stream_dropped = self._stream.stats.dropped if self._stream is not None else 0
        return stream_dropped + self.queue.stats.realtime_dropped

    def frames_to_model(self) -> int:
        return self.model.frames_received

    async def stop(self) -> None:
        self.queue.close()
        await self._stack.aclose()
        if self._events_task is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._events_task


def run_lookout_case(case: Case, *, send_frames: bool) -> dict[str, Any]:
    probe = Probe(delay_s=case.delay_ms / 1000)
    runtime = LookoutRuntime(probe, send_frames=send_frames)
    result = asyncio.run(drive(runtime, case, probe))
    result["runtime"] = "Lookout" + (" (send frames)" if send_frames else "")
    result["case"] = asdict(case)
    return result


# ------------------------------------------------------------ detector path (e2e)


def load_video_frames(
    video: Path, seconds: float, *, keep_images: bool = True
) -> tuple[list[tuple[np.ndarray | None, bytes]], float]:
    """Decoded frames and their JPEGs, made before timing starts (capture is not measured).

    ``keep_images=False`` keeps only the JPEGs (the naive loop has nothing else),
    which saves the ~1.3 MB per frame a decoded 768x576 image takes.
    """
    import cv2

    from device.capture import resized
    from device.vision.frame import encode_jpeg

    capture = cv2.VideoCapture(str(video))
    if not capture.isOpened():
        raise SystemExit(f"cannot open {video}")
    fps = capture.get(cv2.CAP_PROP_FPS) or 10.0
    limit = math.inf if seconds <= 0 else round(seconds * fps)
    frames: list[tuple[np.ndarray | None, bytes]] = []
    while len(frames) < limit:
        ok, image = capture.read()
        if not ok:
            break
        # The capture loop's resize and the JPEG a model would get (768 px, q80).
        small = resized(image, 768)
        frames.append((small if keep_images or not frames else None, encode_jpeg(small, 80)))
    capture.release()
    return frames, fps


async def e2e_lookout(video: Path, seconds: float, detect_fps: float) -> dict[str, Any]:
    """Lookout's path: perception once per sampled frame on the device, count_people fed
    the percepts by the session's fan-out. Latency runs from a frame's arrival (before
    perception) to its change reaching the model, as for the naive loop."""
    from device.events import CountChanged
    from device.vision.frame import Frame
    from device.vision.perception import Perception
    from live.config import SessionConfig
    from live.events import Event
    from live.requests import LiveRequestQueue
    from live.session import Runner
    from live.testing import ScriptedModel
    from models.detector import PersonDetector
    from tools.count_people import CountPeople, check_count_args, coalesce_counts
    from tools.function_tool import FunctionTool

    frames, fps = load_video_frames(video, seconds)
    detector = PersonDetector()
    first = frames[0][0]
    assert first is not None
    detector.detect(first)  # model load and first-run warm-up are not measured

    changes: list[tuple[float, int]] = []  # (t_media, count) of each smoothed change
    arrived: dict[float, float] = {}
    latencies: list[float] = []
    emitted: list[int] = []

    def on_event(event: Event) -> None:
        if isinstance(event, CountChanged) and event.count is not None:
            assert event.t_media is not None
            changes.append((event.t_media, event.count))

    def on_send(item: Sent) -> None:
        for response in getattr(item.message, "responses", ()):
            payload = response.response or {}
            if "people" not in payload or payload.get("status"):
                continue
            while changes:
                t_media, count = changes.pop(0)
                if count == payload["people"]:
                    latencies.append(item.t - arrived[t_media])
                    emitted.append(count)
                    break

    perception = Perception(detector, detect_fps=detect_fps, publish=on_event)
    counter = CountPeople(current=perception.current)
    model = ScriptedModel(keep_frames=False)
    model.on_send = on_send
    queue = LiveRequestQueue()
    tool = FunctionTool(
        counter, name="count_people", check=check_count_args, coalesce=coalesce_counts
    )
    runner = Runner(model, [tool], SessionConfig())
    async with runner.run_live(queue) as session:

        async def consume() -> None:
            async for _event in session:
                pass

        events_task = asyncio.create_task(consume())
        await session.wait_model_connected()
        call_id = model.call("count_people")
        await model.wait_for(lambda: model.responses(call_id), timeout=30)
        stream = session.input_streams()[call_id]
        await stream.wait_idle()
        busy_start = system_busy_s()
        cpu_start = time.process_time()
        wall_start = time.monotonic()
        for i, (image, _jpeg) in enumerate(frames):
            await asyncio.sleep(max(0.0, wall_start + i / fps - time.monotonic()))
            t_media = i / fps
            arrived[t_media] = time.monotonic()
            assert image is not None
            frame = Frame(image, t_media=t_media, index=i)
            percept = await perception.process(frame)
            queue.send_realtime(frame=frame, percept=percept)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2):
                await session.wait_inputs_idle()
        cpu_s = time.process_time() - cpu_start
        wall_s = time.monotonic() - wall_start
        queue.close()
    await events_task
    return {
        "path": f"Lookout perception + count_people, detect_fps {detect_fps:g}",
        "frames": len(frames),
        "detected": perception.stats.detected,
        "changes": len(latencies),
        "final_count": emitted[-1] if emitted else None,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        "others_cores": others_cores(busy_start, cpu_s, wall_s),
        "video_s": len(frames) / fps,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "max_ms": max(latencies, default=float("nan")) * 1000,
        "rss_peak_mb": peak_rss_mb(),
    }


def e2e_naive(video: Path, seconds: float) -> dict[str, Any]:
    """The loop one writes first: every JPEG decoded, every frame detected, raw changes out."""
    import cv2
    import numpy as np

    from models.detector import PersonDetector

    # Only the first image is kept, for the warm-up; the loop itself only has JPEGs.
    decoded, fps = load_video_frames(video, seconds, keep_images=False)
    jpegs = [jpeg for _image, jpeg in decoded]
    first = decoded[0][0]
    assert first is not None
    del decoded
    detector = PersonDetector()
    detector.detect(first)
    last: int | None = None
    latencies: list[float] = []
    busy_start = system_busy_s()
    cpu_start = time.process_time()
    wall_start = time.monotonic()
    for i, jpeg in enumerate(jpegs):
        arrival = wall_start + i / fps
        time.sleep(max(0.0, arrival - time.monotonic()))
        image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None  # our own JPEGs, made above
        count = len(detector.detect(image))
        if count != last:
            # Latency from when the frame arrived (its slot), so falling behind shows.
            latencies.append(time.monotonic() - arrival)
            last = count
    cpu_s = time.process_time() - cpu_start
    wall_s = time.monotonic() - wall_start
    return {
        "path": "naive: decode + detect every frame",
        "frames": len(jpegs),
        "detected": len(jpegs),
        "changes": len(latencies),
        "final_count": last,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        "others_cores": others_cores(busy_start, cpu_s, wall_s),
        "video_s": len(jpegs) / fps,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "max_ms": max(latencies, default=float("nan")) * 1000,
        "rss_peak_mb": peak_rss_mb(),
    }


# ------------------------------------------------------------------ orchestration


def find_video() -> Path | None:
    from device.app.parts import sample_video

    return sample_video()


def write_sample_jpeg(path: Path, video: Path | None) -> int:
    """One real 768x576 JPEG (frame 0 of the sample video, the capture loop's q80)."""
    import cv2
    import numpy as np

    image = None
    if video is not None:
        capture = cv2.VideoCapture(str(video))
        ok, frame = capture.read()
        capture.release()
        image = frame if ok else None
    if image is None:
        # No sample video: a blurred noise image of the same size compresses similarly.
        rng = np.random.default_rng(0)
        image = cv2.GaussianBlur(rng.integers(0, 255, (576, 768, 3), dtype=np.uint8), (31, 31), 0)
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
    if not ok:
        raise SystemExit("JPEG encoding failed")
    path.write_bytes(data.tobytes())
    return len(data)


def ensure_adk_venv(venv: Path, base_python: str) -> Path:
    """The benchmark venv with google-adk==2.13.0, created or repaired on demand."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"creating the ADK benchmark venv at {venv} ...", file=sys.stderr, flush=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
        # Keep `git status` clean even before /.bench-venvs/ is in the repo's .gitignore.
        (venv / ".gitignore").write_text("*\n")
    check = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('google-adk'))"],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0 or check.stdout.strip() != ADK_VERSION:
        print(f"installing {ADK_REQUIREMENT} into {venv} ...", file=sys.stderr, flush=True)
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                ADK_REQUIREMENT,
            ],
            check=True,
        )
    return python


def run_worker(cmd: Sequence[str], *, cwd: Path, timeout: float, what: str) -> dict[str, Any]:
    proc = subprocess.run(
        list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            return result
    tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-15:])
    raise SystemExit(f"{what} failed (exit {proc.returncode}):\n{tail}")


def median_result(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-column median of repeated runs of one case (CPU time is noisy on a shared box)."""
    if len(runs) == 1:
        return runs[0]
    merged = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            values = sorted(run[key] for run in runs)
            middle = values[len(values) // 2]
            merged[key] = middle if len(values) % 2 else (values[len(values) // 2 - 1] + middle) / 2
    merged["repeats"] = len(runs)
    return merged


def ratio(lookout: float, adk: float) -> str:
    if any(isinstance(v, float) and math.isnan(v) for v in (lookout, adk)):
        return "-"
    if adk == 0:
        return "-" if lookout == 0 else "inf"
    return f"{lookout / adk:.2f}"


MICRO_COLUMNS: list[tuple[str, str, str]] = [
    # (header, result key, number format)
    ("seen", "seen", "d"),
    ("dropped", "dropped", "d"),
    ("left", "left", "d"),
    ("backlog", "backlog_max", "d"),
    ("p50 ms", "p50_ms", ".1f"),
    ("p95 ms", "p95_ms", ".1f"),
    ("max ms", "max_ms", ".1f"),
    ("to model", "frames_to_model", "d"),
    ("non-frame", "non_frame", "d"),
    ("RSS MB", "rss_peak_mb", ".1f"),
    ("+RSS MB", "rss_growth_mb", ".1f"),
    ("CPU s/1k", "cpu_s_per_1k", ".3f"),
    ("others", "others_cores", ".2f"),
]


MICRO_LEGEND = """\
seen: frames the tool took; dropped: frames the runtime discarded (and counted); left:
frames neither seen nor dropped when the drain ended (still queued); backlog: most frames
waiting in the tool's input stream; p50/p95/max: frame enqueued -> its result at the model;
to model: frames forwarded to the model; non-frame: other items fed to the tool (its own
results, function responses); RSS: peak of the worker process (imports included), +RSS:
growth during the case; CPU s/1k: process CPU per 1,000 frames sent; others: cores other
processes on the machine kept busy meanwhile (contention)."""

E2E_LEGEND = """\
detected: frames NanoDet ran on; changes: count changes sent on (Lookout: the device's
count, read off the tracker; naive: every raw change); CPU ms/det: process CPU per detection,
CPU ms/frame: per video frame fed; chg p50/p95/max: enqueue of the frame that produced a
change -> the change reaching the model (Lookout) / being emitted (naive); others: cores
other processes kept busy meanwhile."""


def micro_table(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    label_w = max([len(p[0]["label"]) for p in pairs] + [4]) + 2
    runtime_w = max([len(r["runtime"]) for p in pairs for r in p] + [len("Lookout/ADK")]) + 2
    header = f"{'case':<{label_w}}{'runtime':<{runtime_w}}" + "".join(
        f"{name:>{max(9, len(name) + 1)}}" for name, _, _ in MICRO_COLUMNS
    )
    lines = [header, "-" * len(header)]
    for lookout, adk in pairs:
        for i, (row, name) in enumerate(((lookout, None), (adk, None), (None, "Lookout/ADK"))):
            label = lookout["label"] if i == 0 else ""
            cells = []
            for col, key, fmt in MICRO_COLUMNS:
                width = max(9, len(col) + 1)
                if row is None:
                    # Other processes' load is context, not a property of either runtime.
                    text = "" if key == "others_cores" else ratio(lookout[key], adk[key])
                    cells.append(f"{text:>{width}}")
                else:
                    value = row[key]
                    text = "nan" if isinstance(value, float) and math.isnan(value) else ""
                    cells.append(f"{text or format(value, fmt):>{width}}")
            runtime = name or (row or {}).get("runtime", "")
            lines.append(f"{label:<{label_w}}{runtime:<{runtime_w}}" + "".join(cells))
    return "\n".join(lines)


def e2e_table(rows: list[dict[str, Any]]) -> str:
    header = (
        f"{'path':<40}{'frames':>7}{'detected':>9}{'changes':>8}{'CPU s':>8}"
        f"{'CPU ms/det':>11}{'CPU ms/frame':>13}{'CPU %':>7}"
        f"{'chg p50 ms':>11}{'chg p95 ms':>11}{'chg max ms':>11}{'others':>8}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        per_det = r["cpu_s"] / r["detected"] * 1000 if r["detected"] else float("nan")
        per_frame = r["cpu_s"] / r["frames"] * 1000 if r["frames"] else float("nan")
        cpu_pct = r["cpu_s"] / r["wall_s"] * 100 if r["wall_s"] else float("nan")
        lines.append(
            f"{r['path']:<40}{r['frames']:>7}{r['detected']:>9}{r['changes']:>8}"
            f"{r['cpu_s']:>8.1f}{per_det:>11.1f}{per_frame:>13.1f}{cpu_pct:>7.0f}"
            f"{r['p50_ms']:>11.1f}{r['p95_ms']:>11.1f}{r['max_ms']:>11.1f}"
            f"{r['others_cores']:>8.2f}"
        )
    return "\n".join(lines)


def resolve(args: argparse.Namespace) -> None:
    defaults = QUICK if args.quick else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def orchestrate(args: argparse.Namespace) -> None:
    resolve(args)
    lookout_python = args.lookout_python or sys.executable
    adk_python = ensure_adk_venv(Path(args.adk_venv).resolve(), args.base_python or sys.executable)
    video = Path(args.video) if args.video else find_video()
    started = time.monotonic()
    # Other work on the machine skews CPU and latency; the load average says how much.
    load_start = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="vs_adk-") as tmp:
        jpeg = Path(tmp) / "frame.jpg"
        size = write_sample_jpeg(jpeg, video)
        for delay in floats(args.delays):
            frames = round(args.seconds * args.fps)
            label = f"{args.fps:g} fps x {args.seconds:g} s ({frames}), det {delay:g} ms"
            cases.append(Case(label, delay, args.fps, args.seconds, 0, args.drain, str(jpeg)))
        if args.burst:
            for delay in floats(args.burst_delays):
                label = f"burst {args.burst}, det {delay:g} ms"
                cases.append(Case(label, delay, args.fps, 0, args.burst, args.drain, str(jpeg)))
        source = f"frame 0 of {video.name}" if video else "synthetic"
        print(
            f"frames: 8-byte id + {size:,} byte JPEG ({source}); "
            f"drain after sending: {args.drain:g} s; ADK {ADK_VERSION} from {adk_python}",
            flush=True,
        )
        pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for case in cases:
            case_json = json.dumps(asdict(case))
            timeout = case.seconds + case.drain_s + case.frames * 0.05 + 120
            worker = [lookout_python, str(Path(__file__).resolve()), "--worker", "micro"]
            if args.lookout_send_frames:
                worker.append("--lookout-send-frames")
            lookout_runs: list[dict[str, Any]] = []
            adk_runs: list[dict[str, Any]] = []
            for _ in range(args.repeat):
                # Interleaved, so slow drift on the machine hits both runtimes alike.
                lookout_runs.append(
                    run_worker(
                        [*worker, "--case", case_json],
                        cwd=REPO,
                        timeout=timeout,
                        what=f"Lookout case {case.label!r}",
                    )
                )
                adk_runs.append(
                    run_worker(
                        [str(adk_python), str(BENCH / "adk_side.py"), "--case", case_json],
                        cwd=Path(tmp),  # not the repo root: nothing there may shadow ADK's
                        timeout=timeout,
                        what=f"ADK case {case.label!r}",
                    )
                )
            lookout, adk = median_result(lookout_runs), median_result(adk_runs)
            pairs.append((lookout, adk))
            print(
                f"  {case.label}: Lookout p95 {lookout['p95_ms']:.1f} ms, "
                f"ADK p95 {adk['p95_ms']:.1f} ms",
                file=sys.stderr,
                flush=True,
            )
        if pairs:
            repeats = f", median of {args.repeat} runs" if args.repeat > 1 else ""
            print(f"\nRuntime: one input-consuming streaming tool, recording fake model{repeats}")
            print(micro_table(pairs))
            print(MICRO_LEGEND)

        e2e_rows: list[dict[str, Any]] = []
        if not args.skip_e2e:
            if video is None:
                print("\n(detector path skipped: sample video not found)")
            else:
                timeout = (args.e2e_seconds or 80) * 2 + 180
                e2e_worker = [lookout_python, str(Path(__file__).resolve()), "--worker"]
                e2e_args = ["--video", str(video), "--e2e-seconds", str(args.e2e_seconds)]
                for detect_fps in floats(args.e2e_detect_fps):
                    e2e_rows.append(
                        run_worker(
                            [
                                *e2e_worker,
                                "e2e",
                                *e2e_args,
                                "--detect-fps",
                                str(detect_fps),
                            ],
                            cwd=REPO,
                            timeout=timeout,
                            what=f"detector path (Lookout, {detect_fps:g} fps)",
                        )
                    )
                e2e_rows.append(
                    run_worker(
                        [*e2e_worker, "naive", *e2e_args],
                        cwd=REPO,
                        timeout=timeout,
                        what="detector path (naive)",
                    )
                )
                print()
                print(f"Detector path: {video.name} at its own rate, real NanoDet (Lookout venv)")
                print(e2e_table(e2e_rows))
                print(E2E_LEGEND)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"\ntotal {time.monotonic() - started:.0f} s; load average at the end {load} "
        f"(at the start {load_start}) on {os.cpu_count()} CPUs"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"runtime": [list(p) for p in pairs], "detector_path": e2e_rows}, indent=2)
        )


def worker(args: argparse.Namespace) -> None:
    result: dict[str, Any]
    if args.worker == "micro":
        case = Case(**json.loads(args.case))
        result = run_lookout_case(case, send_frames=args.lookout_send_frames)
    elif args.worker == "e2e":
        result = asyncio.run(e2e_lookout(Path(args.video), args.e2e_seconds, args.detect_fps))
    else:
        result = e2e_naive(Path(args.video), args.e2e_seconds)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(
        description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a ~1 minute smoke run")
    parser.add_argument("--seconds", type=float, help="paced run length per case (30)")
    parser.add_argument("--fps", type=float, default=30.0, help="paced frame rate (30)")
    parser.add_argument("--delays", help="detector delays in ms, comma-separated (0,10,50,100)")
    parser.add_argument("--burst", type=int, help="burst size in frames, 0 = none (5000)")
    parser.add_argument("--burst-delays", help="detector delays for the burst (0,50)")
    parser.add_argument("--drain", type=float, help="grace period after sending, s (2)")
    parser.add_argument("--e2e-seconds", type=float, help="video seconds, 0 = all (0)")
    parser.add_argument("--e2e-detect-fps", default="2,10", help="count_people max_fps (2,10)")
    parser.add_argument("--skip-e2e", action="store_true", help="skip the detector path")
    parser.add_argument("--video", help="sample video (default: found like the app does)")
    parser.add_argument(
        "--lookout-send-frames",
        action="store_true",
        help="run Lookout with frames forwarded to the model (<= 1 fps, as --send-frames)",
    )
    parser.add_argument("--adk-venv", default=str(DEFAULT_ADK_VENV), help="ADK benchmark venv")
    parser.add_argument("--base-python", help="interpreter that creates the ADK venv")
    parser.add_argument("--lookout-python", help="interpreter with Lookout (default: this one)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case, median shown (1)")
    parser.add_argument("--json", help="also write the raw results here")
    # Internal: one measurement in a fresh process.
    parser.add_argument("--worker", choices=["micro", "e2e", "naive"], help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--detect-fps", type=float, default=2.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    print(describe_cpu())
    if args.worker:
        if args.e2e_seconds is None:
            args.e2e_seconds = 0.0
        worker(args)
    else:
        orchestrate(args)


if __name__ == "__main__":
    main()
