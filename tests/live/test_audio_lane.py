"""Microphone audio through the session: in order, to the model, to no tool that did not ask."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.genai import types

from live.config import SessionConfig
from live.input_stream import InputStream
from live.model import SendRealtime
from live.requests import LiveRequestQueue
from live.util.clock import FakeClock
from tests.live.harness import blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio

MIC = "audio/pcm;rate=16000"


def chunk(n: int) -> types.Blob:
    return types.Blob(data=n.to_bytes(2, "little") * 320, mime_type=MIC)


def number(data: bytes | None) -> int:
    assert data is not None
    return int.from_bytes(data[:2], "little")


async def counter(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Emits every frame's value (a camera tool: it never asked for audio)."""
    async for request in stream:
        value = blob_value(request.blob.data if request.blob else None)
        yield {"value": value, "mime": request.mime_type}


HEARD: list[int] = []


async def listener(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Notes the number each audio chunk carries; emits how many it heard."""
    async for request in stream:
        HEARD.append(number(request.blob.data if request.blob else None))
        yield {"heard": len(HEARD)}


async def test_the_audio_lane_keeps_every_chunk_in_order_and_says_what_it_dropped() -> None:
    queue: LiveRequestQueue[Any] = LiveRequestQueue(audio_maxsize=5, now=FakeClock().now)
    for n in range(8):
        queue.send_audio(chunk(n))
    queue.send_content("hello")
    queue.close()
    items = [item async for item in queue]
    assert items[0].kind.value == "content"
    assert [number(i.blob.data if i.blob else None) for i in items[1:]] == [3, 4, 5, 6, 7]
    assert queue.stats.audio_sent == 8 and queue.stats.audio_dropped == 3
    with pytest.raises(ValueError, match="audio"):
        LiveRequestQueue().send_audio(types.Blob(data=b"x", mime_type="image/jpeg"))


async def test_microphone_audio_reaches_the_model_in_order_and_no_camera_tool() -> None:
    HEARD.clear()
    listening = FunctionTool(listener, input_accept=("audio/*",))
    async with harness([FunctionTool(counter), listening]) as h:
        camera_call = await h.start("counter")
        await h.start("listener")
        for n in range(30):
            h.queue.send_audio(chunk(n))
        h.send_frame(7)
        await h.settle()
        await h.wait_responses(camera_call, 2)
        await h.model.wait_for(lambda: len(HEARD) == 30)
        sent = [i.message for i in h.model.frames() if isinstance(i.message, SendRealtime)]
        audio = [m.blob for m in sent if (m.blob.mime_type or "").startswith("audio/")]
        assert [number(b.data) for b in audio] == list(range(30))
        assert all(b.mime_type == MIC for b in audio)
        # The camera tool saw the frame only; the listener every chunk, in order.
        camera = [r.response for r in h.model.responses(camera_call)][1:]
        assert camera == [{"value": 7, "mime": "image/jpeg"}]
        assert list(range(30)) == HEARD
        assert h.session.stats.audio_to_model == 30 and h.session.stats.audio_lost == 0


async def test_privacy_mode_keeps_microphone_audio_on_the_device() -> None:
    async with harness([FunctionTool(counter)], SessionConfig(privacy=True)) as h:
        call = await h.start("counter")
        for n in range(10):
            h.queue.send_audio(chunk(n))
        h.send_frame(1)
        await h.wait_responses(call, 2)
        assert h.model.frames() == []
        assert h.session.stats.audio_lost == 10
