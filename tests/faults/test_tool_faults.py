"""Tool-side faults: a flaky detector, a tool that ignores cancellation, start/stop storms."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import numpy as np
import pytest

from device.vision.frame import Frame
from device.vision.perception import Perception
from live.config import SessionConfig
from live.events import ErrorEvent, Event
from live.input_stream import InputStream
from live.tool import ToolContext
from models.detections import Detections
from tests.live.harness import harness
from tools.count_people import CountPeople, check_count_args
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


class FlakyDetector:
    """Raises on every Nth frame; otherwise sees as many people as the frame's first pixel."""

    kind = "fake"

    def __init__(self, every: int) -> None:
        self.every = every
        self.calls = 0

    def detect(self, frame: np.ndarray) -> Detections:
        self.calls += 1
        if self.calls % self.every == 0:
            raise RuntimeError("onnxruntime: bad allocation")
        n = int(frame[0, 0, 0])
        boxes = np.array([[10.0 * i, 0, 10.0 * i + 5, 20] for i in range(n)], dtype=np.float32)
        return Detections(boxes=boxes.reshape(-1, 4), scores=np.ones(n, dtype=np.float32))


def frame_with(n: int) -> np.ndarray:
    return np.full((48, 64, 3), n, dtype=np.uint8)


async def test_a_detector_raising_every_third_frame_does_not_end_the_count() -> None:
    detector = FlakyDetector(every=3)
    said: list[Event] = []
    perception = Perception(detector, detect_fps=100, publish=said.append)
    tool = FunctionTool(
        CountPeople(current=perception.current), name="count_people", check=check_count_args
    )
    async with harness([tool]) as h:
        call_id = await h.start("count_people")
        for i, n in enumerate([1, 1, 2, 2, 2, 3, 3, 3, 3]):
            await h.session.wait_inputs_idle()
            frame = Frame(frame_with(n), t_media=i * 0.5, index=i)
            h.queue.send_realtime(frame=frame, percept=await perception.process(frame))
        await h.session.wait_inputs_idle()
        people = [e["people"] for e in h.model.emissions(call_id) if "people" in e]
        assert people == [1, 2, 3]
        assert perception.stats.errors == 3 and perception.stats.detected == 6
        assert not [e for e in h.model.emissions(call_id) if e.get("status") == "error"]
        assert len(h.session.running_streams()) == 1
    # Each run of failures is said once, not once per frame.
    errors = [e for e in said if isinstance(e, ErrorEvent)]
    assert [e.message for e in errors] == ["detector failed: onnxruntime: bad allocation"] * 3


async def test_stop_of_a_tool_that_ignores_cancellation_completes_and_says_so() -> None:
    release = threading.Event()
    cleaned = threading.Event()

    async def stubborn(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
        """Blocks in a thread that cannot be interrupted (like a hung driver call)."""
        yield {"status": "watching"}
        try:
            await anyio.to_thread.run_sync(release.wait)
            yield {"status": "never"}
        finally:
            cleaned.set()

    config = SessionConfig(stop_timeout_s=0.2)
    async with harness([FunctionTool(stubborn)], config) as h:
        call_id = await h.start("stubborn")
        await h.wait_responses(call_id, 2)
        stop_id = h.model.call("stop_streaming", {"function_name": "stubborn"})
        await h.clock.run_for(0.3, step=0.05)  # the stop's budget runs out, on virtual time
        await h.wait_responses(stop_id, 1)
        answer = h.model.responses(stop_id)[0].response
        assert answer["status"] == "Successfully stopped streaming function stubborn"
        assert answer["stopped"][0]["cleanup"] == "still running after 0.2 s"
        errors = [e for e in h.log.events if isinstance(e, ErrorEvent) and e.where == "stop"]
        assert errors and "did not stop within 0.2 s" in errors[0].message
        release.set()  # the driver call returns; the tool's cleanup then runs
        assert await anyio.to_thread.run_sync(cleaned.wait, 5)
        await h.settle()
        assert h.session.running_streams() == []
        assert [e for e in h.model.emissions(call_id) if e.get("status") == "never"] == []


async def test_a_hundred_start_stop_cycles_leak_no_tasks_or_threads() -> None:
    started = 0

    async def watcher(stream: InputStream, context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        """Waits for frames forever."""
        nonlocal started
        started += 1
        async for request in stream:
            yield {"seq": request.seq}

    async with harness([FunctionTool(watcher)]) as h:
        await h.settle()
        tasks_before = len(asyncio.all_tasks())
        threads_before = threading.active_count()
        for _ in range(100):
            call_id = h.model.call("watcher")
            await h.wait_responses(call_id, 1)
            stop_id = h.model.call("stop_streaming", {"function_name": "watcher"})
            await h.wait_responses(stop_id, 1)
            assert h.model.responses(stop_id)[0].response["stopped"][0]["id"] == call_id
        await h.settle()
        assert started == 100
        assert h.session.running_streams() == [] and h.session.input_streams() == {}
        assert len(asyncio.all_tasks()) == tasks_before
        assert threading.active_count() <= threads_before + 1
