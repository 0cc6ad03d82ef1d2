"""GoAway: switch over to the resumed connection when a resumable handle allows, else reconnect.

Scripted model, virtual time. The real SDK against the fake: tests/models/test_gemini_goaway.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from live.events import ConnectionState, Emission
from live.input_stream import InputStream
from live.testing import ScriptedModel
from tests.live.harness import Harness, blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


async def echo(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    async for request in stream:
        yield {"value": blob_value(request.blob.data if request.blob else None)}


def states(h: Harness) -> list[str]:
    return [e.state for e in h.log.events if isinstance(e, ConnectionState)]


async def go_away_after(h: Harness, call_id: str) -> None:
    """Frames 0..2 on the first connection, then a GoAway with 2 s left."""
    for value in range(3):
        h.send_frame(value)
        await h.wait_responses(call_id, value + 2)
    await h.lasted()
    h.model.go_away(time_left_s=2.0)
    await h.model.wait_for(lambda: len(h.model.connections) == 2)
    await h.settle()


async def frames_after(h: Harness, call_id: str) -> None:
    for value in range(3, 6):
        h.send_frame(value)
        await h.wait_responses(call_id, value + 2)
    logged = [e.payload["value"] for e in h.log.events if isinstance(e, Emission)]
    assert logged == list(range(6))
    assert [e["value"] for e in h.model.emissions(call_id)] == list(range(6))


async def test_a_resumable_handle_switches_over_without_an_outage() -> None:
    async with harness([FunctionTool(echo)]) as h:
        call_id = await h.start("echo")
        h.model.resumption("h-1")
        await go_away_after(h, call_id)
        old, new = h.model.connections
        assert old.closed and not new.closed
        assert h.model.setups[1].resumption_handle == "h-1"
        assert states(h)[-2:] == ["go_away", "connected"]
        await frames_after(h, call_id)
        assert {r.connection for r in h.model.responses(call_id)} == {0, 1}


async def test_a_handle_no_longer_resumable_reconnects_as_before() -> None:
    async with harness([FunctionTool(echo)]) as h:
        call_id = await h.start("echo")
        h.model.resumption("h-1")
        h.model.resumption("h-2", resumable=False)  # a call or a generation runs
        await go_away_after(h, call_id)
        assert states(h)[-4:] == ["go_away", "disconnected", "reconnecting", "connected"]
        assert h.model.setups[1].resumption_handle == "h-1"
        await frames_after(h, call_id)


async def test_a_resumed_connection_that_fails_to_open_falls_back_to_reconnecting() -> None:
    model = ScriptedModel(refuse_connects={1})
    async with harness([FunctionTool(echo)], model=model) as h:
        call_id = await h.start("echo")
        h.model.resumption("h-1")
        await go_away_after(h, call_id)
        await h.model.wait_for(lambda: "connected" in states(h)[-1:] and len(model.setups) == 3)
        assert "disconnected" in states(h)[-4:]
        assert [s.resumption_handle for s in model.setups[1:]] == ["h-1", "h-1"]
        await frames_after(h, call_id)


async def test_a_handle_past_its_two_hours_starts_a_fresh_session_at_once() -> None:
    """Handles are valid two hours: an older one is not offered to the service (whose
    refusal would cost a round trip); the session starts afresh and says what it lost."""
    async with harness([FunctionTool(echo)]) as h:
        call_id = await h.start("echo")
        h.model.resumption("h-1")
        await h.lasted()
        h.model.disconnect()
        await h.model.wait_for(lambda: len(h.model.connections) == 2)
        assert h.model.setups[1].resumption_handle == "h-1"  # fresh enough: resumed
        await h.clock.run_for(h.session.config.reconnect.handle_valid_s)
        h.model.disconnect()
        await h.model.wait_for(lambda: len(h.model.connections) == 3)
        await h.wait_event(lambda events: any(e.type == "stream_stopped" for e in events))
        assert h.model.setups[2].resumption_handle is None
        # A fresh model session never issued the running call: the device ends it.
        assert call_id not in [s["id"] for s in h.session.running_streams()]
