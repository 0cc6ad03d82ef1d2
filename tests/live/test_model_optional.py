"""The model is optional at every moment: the session works without it and picks it up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from live.config import ReconnectPolicy, SessionConfig
from live.events import ConnectionState, Emission, ToolResult
from live.input_stream import InputStream
from live.model import SendToolResponse
from live.testing import ScriptedModel
from tests.live.harness import blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


async def counter(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Emits every frame's value."""
    async for request in stream:
        yield {"value": blob_value(request.blob.data if request.blob else None)}


def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"sum": a + b}


async def test_an_unreachable_model_is_retried_with_backoff_while_device_calls_work() -> None:
    model = ScriptedModel(refuse_connects={0, 1, 2, 3})
    config = SessionConfig(reconnect=ReconnectPolicy(initial_backoff_s=1.0, max_backoff_s=4.0))
    async with harness([FunctionTool(counter), FunctionTool(add)], config, model=model) as h:
        # Nothing waits for the model: a device call of a plain tool answers at once...
        call = await h.session.call_tool("add", {"a": 2, "b": 3})
        assert call.response == {"sum": 5} and call.call_id.startswith("device-")
        call_id = call.call_id
        results = [e for e in h.log.events if isinstance(e, ToolResult) and e.id == call_id]
        assert results[0].response == {"sum": 5}
        # ...and a device stream runs and records its emissions, none of them for a model.
        stream_id = (await h.session.call_tool("counter")).call_id
        await h.settle()
        for value in (1, 2):
            h.send_frame(value)
            await h.settle()
        emitted = [e for e in h.log.events if isinstance(e, Emission) and e.id == stream_id]
        assert [e.payload["value"] for e in emitted] == [1, 2]
        assert not any(e.to_model for e in emitted)
        assert h.session.running_streams()[0]["by"] == "device"
        # The attempts go on with growing waits; the run of failures is said once, with
        # its reason and the next try, not once per attempt...
        await h.clock.run_for(30)
        assert len(model.connections) == 1 and h.session.model_connected
        unreachable = [
            e for e in h.log.events if isinstance(e, ConnectionState) and e.state == "unreachable"
        ]
        assert [e.retry_in_s for e in unreachable] == [1.0]
        assert unreachable[0].reason == "connection refused" and unreachable[0].model == "scripted"
        # ...and its end once, with how many tries it took: after waits of 1, 2, 4 and 4 s.
        [back] = [
            e for e in h.log.events if isinstance(e, ConnectionState) and e.state == "connected"
        ]
        assert back.t == pytest.approx(11.0) and "after 4 failed attempts" in back.reason
        # The model, once there, was never sent anything of the device calls.
        sent_ids = {
            r.id
            for s in model.sent
            if isinstance(s.message, SendToolResponse)
            for r in s.message.responses
        }
        assert call_id not in sent_ids and stream_id not in sent_ids


async def test_on_return_the_model_gets_one_coalesced_emission_per_stream() -> None:
    model = ScriptedModel(refuse_connects={1, 2})
    config = SessionConfig(reconnect=ReconnectPolicy(initial_backoff_s=1.0))
    async with harness([FunctionTool(counter)], config, model=model) as h:
        first = await h.start("counter")
        second = await h.start("counter")
        model.resumption("h-1")
        h.send_frame(1)
        await h.wait_responses(second, 2)
        model.disconnect(code=1006)
        await h.settle()
        for value in range(2, 9):  # seven changes while the model is away
            h.send_frame(value)
            await h.settle()
        await h.clock.run_for(10)
        await h.wait_responses(first, 3)
        await h.wait_responses(second, 3)
        for call_id in (first, second):
            after = [r for r in h.model.responses(call_id) if r.connection == 1]
            assert len(after) == 1  # the current state, once; not seven replays
            assert after[0].response == {"value": 8, "while_away": {"updates": 7}}
        # The event log has every one of them.
        logged = [
            e.payload["value"] for e in h.log.events if isinstance(e, Emission) and e.id == first
        ]
        assert logged == list(range(1, 9))
        assert h.session.stats.emissions_coalesced == 12


async def test_a_fresh_model_session_ends_model_streams_but_not_device_streams() -> None:
    async with harness([FunctionTool(counter)]) as h:
        by_model = await h.start("counter")
        by_device = (await h.session.call_tool("counter")).call_id
        await h.lasted()
        h.model.disconnect(code=1011)  # no resumption handle was issued: a fresh session
        await h.model.wait_for(lambda: len(h.model.connections) == 2)
        await h.wait_event(lambda events: any(e.type == "stream_stopped" for e in events))
        running = [s["id"] for s in h.session.running_streams()]
        assert running == [by_device]
        h.send_frame(5)
        await h.settle()
        device_emissions = [
            e for e in h.log.events if isinstance(e, Emission) and e.id == by_device
        ]
        assert device_emissions[-1].payload == {"value": 5}
        assert by_model not in running
