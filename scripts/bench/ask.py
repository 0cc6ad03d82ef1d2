"""Benchmark request-response mode (``lookout ask``'s path), in process.

Rows:
  runtime turn      a plain tool round trip through TurnRunner with a scripted model
                    (model -> call -> tool -> FunctionResponse -> model -> answer):
                    the runtime's own cost per question
  count now         "how many people?" with the local model, the real detector and the
                    sample video: one whole one-shot question per iteration, as `lookout ask`
                    does it (open the source, load the detector, ask), minus process start
  report            an occupancy report over N minutes of the sample video at fast pace
                    (looped): wall time, samples per second, model requests made (the
                    progress events never become requests), peak RSS

    python scripts/bench/ask.py [--turns 2000] [--questions 30] [--report-minutes 2]
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from machine import describe_cpu

from device.app.ask.command import AskApp, AskOptions
from device.app.parts import sample_video
from device.config import build
from live.events import JobProgress, ToolResult
from live.testing import ScriptedTurnModel, call, say
from live.turns.conversation import TurnRunner
from live.turns.model import TurnReply, TurnRequest
from models.local.turns import LocalTurnModel
from tools.function_tool import FunctionTool


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def runtime_turns(n: int) -> dict[str, Any]:
    async def ping(x: int) -> dict[str, int]:
        """Echo."""
        return {"x": x}

    def reply(request: TurnRequest) -> TurnReply:
        last = request.contents[-1].parts or []
        if last and last[0].function_response is not None:
            return say("done")
        return call("ping", {"x": 1}, id="p")

    model = ScriptedTurnModel(default=reply)
    runner = TurnRunner(model, [FunctionTool(ping)])
    times: list[float] = []
    before = rss_mb()
    async with runner.open() as conv:
        for _ in range(n):
            start = time.perf_counter()
            await conv.ask("ping")
            times.append((time.perf_counter() - start) * 1000)
            # Each question here is independent; keep the history from growing the cost.
            conv.history.clear()
    return {
        "p50_ms": statistics.median(times),
        "p95_ms": pct(times, 0.95),
        "rss_delta_mb": rss_mb() - before,
    }


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def write(self, event: Any) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass


class CountingModel(LocalTurnModel):
    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def generate(self, request: TurnRequest) -> TurnReply:
        self.requests += 1
        return await super().generate(request)


def app_for(question: str, video: Path, **flags: Any) -> tuple[AskApp, Recorder, CountingModel]:
    config = build(
        {"source": str(video), "model": "local", "pace": "fast", **flags},
        environ={},
        system_config=Path("/nonexistent/lookout.toml"),
    )
    model = CountingModel()
    app = AskApp(
        config,
        AskOptions(question),
        out=io.StringIO(),
        err=io.StringIO(),
        model=model,
        watch_signals=False,
    )
    recorder = Recorder()
    app.sinks.append(recorder)
    return app, recorder, model


async def questions(video: Path, n: int) -> dict[str, Any]:
    times: list[float] = []
    for _ in range(n):
        app, _, _ = app_for("how many people?", video)
        start = time.perf_counter()
        code = await app.run()
        times.append((time.perf_counter() - start) * 1000)
        assert code == 0
    return {"first_ms": times[0], "p50_ms": statistics.median(times[1:] or times)}


async def report(video: Path, minutes: float) -> dict[str, Any]:
    app, recorder, model = app_for(f"report for {minutes} minutes", video, loop=True)
    start = time.perf_counter()
    cpu = time.process_time()
    code = await app.run()
    wall = time.perf_counter() - start
    final = [
        e.response
        for e in recorder.events
        if isinstance(e, ToolResult) and e.response.get("status") == "succeeded"
    ]
    assert code == 0 and final, app.err.getvalue()  # type: ignore[attr-defined]
    samples = int(final[0]["samples"])
    return {
        "wall_s": wall,
        "cpu_s": time.process_time() - cpu,
        "samples": samples,
        "samples_per_s": samples / wall,
        "progress_events": sum(isinstance(e, JobProgress) for e in recorder.events),
        "model_requests": model.requests,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--report-minutes", type=float, default=2.0)
    args = parser.parse_args()
    print(describe_cpu())
    video = sample_video()
    if video is None:
        sys.exit("sample video missing: run python3 scripts/fetch_sample_data.py")
    turns = await runtime_turns(args.turns)
    asked = await questions(video, args.questions)
    reported = await report(video, args.report_minutes)
    print(f"{'row':<16} {'figure':<40} value")
    print(f"{'runtime turn':<16} {'p50 / p95 per question (ms)':<40} "
          f"{turns['p50_ms']:.3f} / {turns['p95_ms']:.3f}")  # fmt: skip
    print(f"{'':<16} {f'RSS change over {args.turns} turns (MB)':<40} {turns['rss_delta_mb']:+.1f}")
    print(f"{'count now':<16} {'first one-shot question (ms)':<40} {asked['first_ms']:.0f}")
    print(f"{'':<16} {'p50 of the others (ms)':<40} {asked['p50_ms']:.0f}")
    print(f"{'report':<16} {f'{args.report_minutes:g} min of video: wall / CPU (s)':<40} "
          f"{reported['wall_s']:.1f} / {reported['cpu_s']:.1f}")  # fmt: skip
    print(f"{'':<16} {'samples, samples per second':<40} "
          f"{reported['samples']}, {reported['samples_per_s']:.1f}")  # fmt: skip
    print(f"{'':<16} {'progress events / model requests':<40} "
          f"{reported['progress_events']} / {reported['model_requests']}")  # fmt: skip
    print(f"{'process':<16} {'peak RSS (MB)':<40} {peak_rss_mb():.0f}")


if __name__ == "__main__":
    anyio.run(main)
