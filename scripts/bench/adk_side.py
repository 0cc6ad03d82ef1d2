"""The runtime-neutral benchmark driver, and the ADK Python half of scripts/bench/vs_adk.py.

This file has two users:

* ``vs_adk.py`` (Lookout's venv) imports the driver part (``Case``, ``Probe``,
  ``count_frames``, ``drive``) so Lookout is measured by the very same code;
* the benchmark venv with ``google-adk`` runs it as a script, one case per
  process, and it prints one ``RESULT {json}`` line.

It must never import Lookout code, and it imports ``google.adk`` only inside
``run_adk_case`` so that Lookout's venv (which has no ADK) can import the driver.

The ADK side is wired the way an ADK user would wire a video-consuming streaming
tool (ADK 2.13.0): an ``LlmAgent`` whose tool is an async generator with an
``input_stream: LiveRequestQueue`` parameter, run by ``InMemoryRunner.run_live``;
the model is a ``BaseLlm`` subclass whose ``connect()`` yields a recording
``BaseLlmConnection`` that asks for ``count_people`` once and timestamps every
``send_content`` / ``send_realtime`` the flow makes.

    .bench-venvs/adk/bin/python scripts/bench/adk_side.py --case '{"label": ...}'
"""

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import struct
import sys
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

TOOL_NAME = "count_people"
CALL_ID = "call-1"
FRAME_MIME = "image/jpeg"
_ID = struct.Struct(">Q")  # every frame starts with its id, 8 bytes big-endian


# --------------------------------------------------------------------------- driver


@dataclass
class Case:
    """One benchmark run, the same for both runtimes."""

    label: str
    delay_ms: float
    fps: float = 30.0
    seconds: float = 30.0
    burst: int = 0  # > 0: send this many frames back to back instead of pacing
    drain_s: float = 2.0
    jpeg_path: str = ""

    @property
    def frames(self) -> int:
        return self.burst if self.burst else round(self.seconds * self.fps)


def frame_bytes(frame_id: int, payload: bytes) -> bytes:
    return _ID.pack(frame_id) + payload


def frame_id_of(data: bytes | None) -> int | None:
    if data is None or len(data) < _ID.size:
        return None
    return int(_ID.unpack_from(data)[0])


def rss_mb() -> float:
    """Current resident set size (not the peak)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mb()


def peak_rss_mb() -> float:
    """This process's peak RSS.

    VmHWM, not ``getrusage().ru_maxrss``: on Linux the latter carries over the
    parent's peak across fork + exec, so every worker would report at least the
    orchestrator's size.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def system_busy_s() -> float:
    """CPU seconds all processes on the machine have used (from /proc/stat; 0 elsewhere).

    Set against the worker's own CPU time this says how much else ran during a
    case: the benchmark shares its cores with whatever else the machine is doing.
    """
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # user nice system idle iowait irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def others_cores(busy_start: float, cpu_s: float, wall_s: float) -> float:
    """Average number of cores other processes kept busy over a measured window."""
    if wall_s <= 0 or busy_start == 0.0:
        return float("nan")
    return max(0.0, (system_busy_s() - busy_start - cpu_s) / wall_s)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


@dataclass
class Probe:
    """Everything both runtimes are measured by, filled in the same places."""

    delay_s: float
    enqueued: list[float] = field(default_factory=list)  # index = frame id
    latencies: list[float] = field(default_factory=list)
    seen: int = 0
    in_detector: int = 0
    non_frame: int = 0
    results_at_model: int = 0
    frames_to_model: int = 0
    messages_to_model: int = 0
    backlog_max: int = 0
    backlog: Callable[[], int] = field(default=lambda: 0, repr=False)

    def sample_backlog(self) -> None:
        self.backlog_max = max(self.backlog_max, self.backlog())

    def result_at_model(self, frame_id: int, t: float) -> None:
        self.results_at_model += 1
        self.latencies.append(t - self.enqueued[frame_id])


def blocking_detect(delay_s: float) -> None:
    """The pretend detector: holds a worker thread the way ONNX inference does."""
    if delay_s > 0:
        time.sleep(delay_s)


async def count_frames(
    probe: Probe, items: AsyncIterator[bytes | None]
) -> AsyncIterator[dict[str, Any]]:
    """The counting rule both tools share.

    ``items`` is whatever the runtime put into the tool's input stream, reduced
    to the blob bytes (``None`` for anything that is not a frame). Every frame
    is "detected" in a worker thread (``asyncio.to_thread`` on both sides, so the
    thread pool is not a difference between them) and answered with its id.
    """
    async for data in items:
        frame_id = frame_id_of(data)
        if frame_id is None:
            probe.non_frame += 1
            probe.sample_backlog()
            continue
        probe.seen += 1
        probe.sample_backlog()
        probe.in_detector += 1
        try:
            await asyncio.to_thread(blocking_detect, probe.delay_s)
        finally:
            probe.in_detector -= 1
        yield {"frame_id": frame_id}


class Runtime(Protocol):
    """What ``drive`` needs from a runtime under test."""

    async def start(self) -> None:
        """Open the session; return once the tool is running and reading its input."""

    def send_frame(self, data: bytes) -> None: ...

    def backlog(self) -> int:
        """Items waiting in the tool's own input queue."""

    def upstream(self) -> int:
        """Items still in the session's request queue (not yet fanned out)."""

    def dropped(self) -> int:
        """Frames the runtime discarded on purpose (and counted)."""

    def frames_to_model(self) -> int:
        """Frames the runtime sent on to the live model."""

    async def stop(self) -> None: ...


async def drive(runtime: Runtime, case: Case, probe: Probe) -> dict[str, Any]:
    """Send the case's frames, wait for the tool to finish (up to ``drain_s``), measure."""
    payload = await asyncio.to_thread(Path(case.jpeg_path).read_bytes)
    probe.backlog = runtime.backlog
    await runtime.start()
    rss_start = rss_mb()
    rss_top = rss_start
    busy_start = system_busy_s()
    cpu_start = time.process_time()
    wall_start = time.monotonic()
    total = case.frames
    for i in range(total):
        if case.burst:
            # Back to back, only yielding to the loop between frames, as a camera
            # callback handing over a burst of buffered frames would.
            await asyncio.sleep(0)
        else:
            await asyncio.sleep(max(0.0, wall_start + i / case.fps - time.monotonic()))
        data = frame_bytes(i, payload)
        probe.enqueued.append(time.monotonic())
        runtime.send_frame(data)
        probe.sample_backlog()
        if i % 30 == 0:
            rss_top = max(rss_top, rss_mb())
    send_s = time.monotonic() - wall_start
    backlog_at_end = runtime.backlog()

    # Drain: the same grace period for both runtimes; whatever is still queued or
    # in the detector after it is reported as left over, not silently waited for.
    deadline = time.monotonic() + case.drain_s
    while time.monotonic() < deadline:
        pending = runtime.backlog() + runtime.upstream() + probe.seen - probe.results_at_model
        if pending == 0:
            break
        rss_top = max(rss_top, rss_mb())
        await asyncio.sleep(0.005)
    wall_s = time.monotonic() - wall_start
    cpu_s = time.process_time() - cpu_start
    rss_top = max(rss_top, rss_mb())
    dropped = runtime.dropped()
    result = {
        "label": case.label,
        "sent": total,
        "seen": probe.seen,
        "dropped": dropped,
        "left": total - probe.seen - dropped,
        "backlog_max": probe.backlog_max,
        "backlog_at_end": backlog_at_end,
        "results_at_model": probe.results_at_model,
        "p50_ms": percentile(probe.latencies, 50) * 1000,
        "p95_ms": percentile(probe.latencies, 95) * 1000,
        "max_ms": max(probe.latencies, default=float("nan")) * 1000,
        "frames_to_model": runtime.frames_to_model(),
        "messages_to_model": probe.messages_to_model,
        "non_frame": probe.non_frame,
        "rss_peak_mb": peak_rss_mb(),
        "rss_growth_mb": rss_top - rss_start,
        "cpu_s": cpu_s,
        "cpu_s_per_1k": cpu_s / total * 1000 if total else float("nan"),
        "others_cores": others_cores(busy_start, cpu_s, wall_s),
        "send_s": send_s,
        "wall_s": wall_s,
    }
    await runtime.stop()
    return result


# ------------------------------------------------------------------------ ADK half


def run_adk_case(case: Case) -> dict[str, Any]:
    # Imported here so that Lookout's venv, which has no ADK, can use the driver.
    from google.adk.agents import LlmAgent
    from google.adk.agents.live_request_queue import LiveRequestQueue
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.base_llm_connection import BaseLlmConnection, RealtimeInput
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    probe = Probe(delay_s=case.delay_ms / 1000)
    state: dict[str, Any] = {}
    pending_seen = asyncio.Event()
    tool_started = asyncio.Event()

    class RecordingConnection(BaseLlmConnection):
        """Plays the live model: asks for count_people once, records what it is sent."""

        def __init__(self) -> None:
            self.closed = asyncio.Event()
            self.asked = False

        def _record(self, content: types.Content) -> None:
            now = time.monotonic()
            probe.messages_to_model += 1
            for part in content.parts or ():
                response = part.function_response
                if response is None or response.response is None:
                    continue
                frame_id = response.response.get("frame_id")
                if frame_id is not None:
                    probe.result_at_model(int(frame_id), now)
                elif "status" in response.response:
                    pending_seen.set()

        async def send_history(self, history: list[types.Content]) -> None:
            pass

        async def send_content(self, content: types.Content) -> None:
            self._record(content)
            await asyncio.sleep(0)  # a real connection awaits its socket here

        async def _send_content(self, content: types.Content, *, partial: bool = False) -> None:
            await self.send_content(content)

        async def send_realtime(self, blob: RealtimeInput) -> None:
            if isinstance(blob, types.Blob):
                probe.frames_to_model += 1
            await asyncio.sleep(0)

        async def receive(self) -> AsyncGenerator[LlmResponse, None]:
            if not self.asked:
                self.asked = True
                call = types.FunctionCall(id=CALL_ID, name=TOOL_NAME, args={})
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(function_call=call)])
                )
            # Then stay silent until closed; a receive() that returns without
            # yielding is how the flow learns the connection is done.
            if not self.closed.is_set():
                await self.closed.wait()

        async def close(self) -> None:
            self.closed.set()

    class RecordingLlm(BaseLlm):
        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            raise NotImplementedError("live only")
            yield  # pragma: no cover  (makes this an async generator, as the base is)

        @contextlib.asynccontextmanager
        async def connect(self, llm_request: LlmRequest) -> AsyncIterator[BaseLlmConnection]:
            connection = RecordingConnection()
            state["connection"] = connection
            try:
                yield connection
            finally:
                await connection.close()

    # ADK finds the input stream by the parameter name *and* this annotation
    # (flows/llm_flows/tools/_live_caller.py:304-309); the function must be an
    # async generator function (_live_caller.py:216).
    async def count_people(input_stream: LiveRequestQueue) -> AsyncIterator[dict[str, Any]]:
        """Count the people in view and report each processed frame."""
        # Count the frames ADK's fan-out (live/_live_llm_flow.py:117-118) puts into
        # this stream, so the backlog is reported in frames like Lookout's, not in
        # items (the stream also receives the tool's own results).
        fan_out = input_stream.send

        def counting_send(request: Any) -> None:
            if request.blob is not None:
                state["frames_in"] = state.get("frames_in", 0) + 1
            fan_out(request)

        input_stream.send = counting_send  # type: ignore[method-assign,assignment]
        state["input_stream"] = input_stream
        tool_started.set()

        async def items() -> AsyncIterator[bytes | None]:
            while True:
                request = await input_stream.get()
                if request.close:
                    return
                yield request.blob.data if request.blob is not None else None

        async for result in count_frames(probe, items()):
            yield result

    class AdkRuntime:
        def __init__(self) -> None:
            self.queue = LiveRequestQueue()
            agent = LlmAgent(
                name="bench", model=RecordingLlm(model="recording-live"), tools=[count_people]
            )
            self.runner = InMemoryRunner(agent=agent, app_name="bench")
            self.events = 0
            self.task: asyncio.Task[None] | None = None

        async def _consume(self, session_id: str) -> None:
            async for _event in self.runner.run_live(
                user_id="bench",
                session_id=session_id,
                live_request_queue=self.queue,
                run_config=RunConfig(),
            ):
                self.events += 1

        async def start(self) -> None:
            session = await self.runner.session_service.create_session(
                app_name="bench", user_id="bench"
            )
            self.task = asyncio.create_task(self._consume(session.id))
            async with asyncio.timeout(30):
                await pending_seen.wait()
                await tool_started.wait()
            # Let the tool get to its first input_stream.get(), as on the Lookout side.
            await asyncio.sleep(0.05)

        def send_frame(self, data: bytes) -> None:
            self.queue.send_realtime(types.Blob(data=data, mime_type=FRAME_MIME))

        def backlog(self) -> int:
            # Frames waiting in the tool's input stream (put there, not yet taken).
            return int(state.get("frames_in", 0)) - probe.seen

        def upstream(self) -> int:
            return int(self.queue._queue.qsize())

        def dropped(self) -> int:
            return 0  # ADK's queues are unbounded asyncio.Queues: nothing is ever dropped

        def frames_to_model(self) -> int:
            return probe.frames_to_model

        async def stop(self) -> None:
            self.queue.close()
            if self.task is not None:
                try:
                    async with asyncio.timeout(30):
                        await self.task
                except TimeoutError:
                    self.task.cancel()

    return asyncio.run(drive(AdkRuntime(), case, probe))


def adk_version() -> str:
    from importlib.metadata import version

    return version("google-adk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", required=True, help="the Case as JSON")
    args = parser.parse_args()
    # Keep ADK's own logging and deprecation chatter out of the result stream.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    warnings.simplefilter("ignore")
    case = Case(**json.loads(args.case))
    result = run_adk_case(case)
    result["runtime"] = f"ADK {adk_version()}"
    result["case"] = asdict(case)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
