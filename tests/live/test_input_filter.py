"""A call's input filter: each stream takes only its own source's input (one camera's), and
the model lane only the frames it is asked for. Two sources that interleave never push
each other's input out of a call's latest-wins stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from live.config import SessionConfig
from live.input_stream import InputFilter, InputStream
from live.model import SendRealtime
from live.requests import LiveRequest
from tests.live.harness import Harness, blob_value, frame_blob, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


async def watch(stream: InputStream, camera: str = "") -> AsyncIterator[dict[str, Any]]:
    """Report the number in each frame of one camera.

    Args:
        camera: the camera watched.
    """
    async for request in stream:
        yield {"camera": camera, "seen": blob_value(request.blob.data), "from": request.origin}


def of_camera(args: dict[str, Any]) -> InputFilter | None:
    camera = args.get("camera")
    return None if camera is None else (lambda request: request.origin == camera)


def send(h: Harness, origin: str, value: int) -> None:
    h.queue.send_realtime(frame_blob(value), origin=origin)


async def test_each_call_gets_only_its_cameras_frames_however_they_interleave() -> None:
    tool = FunctionTool(watch, input_filter=of_camera)
    async with harness([tool], realtime_maxsize=8) as h:
        door = await h.start("watch", {"camera": "door"})
        till = await h.start("watch", {"camera": "till"})
        everything = await h.start("watch")  # no camera: no filter, every frame
        for value in (1, 2, 3):
            # The till's frame comes right after the door's, before anyone reads: in a
            # shared latest-wins stream of one it would push the door's out.
            send(h, "door", value)
            send(h, "till", 10 * value)
            await h.settle()
        await h.wait_responses(door, 4)
        await h.wait_responses(till, 4)
        assert h.model.emissions(door) == [
            {"camera": "door", "seen": v, "from": "door"} for v in (1, 2, 3)
        ]
        assert h.model.emissions(till) == [
            {"camera": "till", "seen": v, "from": "till"} for v in (10, 20, 30)
        ]
        streams = h.session.input_streams()
        assert streams[door].stats.received == streams[till].stats.received == 3
        assert streams[everything].stats.received == 6  # every camera's (latest wins)


async def test_the_model_lane_sends_only_the_frames_it_is_asked_for() -> None:
    config = SessionConfig(
        send_frames=True,
        model_frame_interval_s=1.0,
        model_input=lambda request: request.origin == "door",
    )
    async with harness([FunctionTool(watch, input_filter=of_camera)], config) as h:
        start = h.clock.now()
        for i in range(30):  # each camera at 2 fps for 15 s; the till's frame last each time
            await h.clock.run_for(start + i / 2 - h.clock.now())
            send(h, "door", i)
            send(h, "till", 1000 + i)
            await h.settle()
        await h.clock.run_for(1.0)
        sent = [f.message for f in h.model.frames()]
        values = [blob_value(m.blob.data) for m in sent if isinstance(m, SendRealtime)]
        assert len(values) >= 14 and all(v < 1000 for v in values), values


async def test_a_filter_that_fails_starves_its_own_call_only() -> None:
    def broken(args: dict[str, Any]) -> InputFilter | None:
        if args.get("camera") != "bad":
            return of_camera(args)

        def fails(request: LiveRequest[Any]) -> bool:
            raise RuntimeError("no such camera")

        return fails

    async with harness([FunctionTool(watch, input_filter=broken)]) as h:
        bad = await h.start("watch", {"camera": "bad"})
        door = await h.start("watch", {"camera": "door"})
        for value in (1, 2):
            send(h, "door", value)
            await h.settle()
        await h.wait_responses(door, 3)
        assert [e["seen"] for e in h.model.emissions(door)] == [1, 2]
        assert h.model.emissions(bad) == []
