"""Model-side faults against the runtime: drops at random points, GoAway storms, silence.

Deterministic: a seeded random schedule of disconnects with close codes 1000,
1006 and 1011, driven through the scripted model in virtual time. Every
emission the tool made must reach the model once, in order — on its own, or
inside the one coalesced emission that stands for what it missed while away
(checked against the event log) — and memory held while disconnected stays
bounded.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from live.config import ReconnectPolicy, SessionConfig
from live.events import ConnectionState, Emission
from live.input_stream import InputStream
from live.model import LiveSetup
from live.requests import LiveRequestQueue
from live.session import Runner
from live.testing import ScriptedModel
from tests.live.harness import blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


async def echo(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Emits every frame's value (every frame is a change)."""
    async for request in stream:
        yield {"value": blob_value(request.blob.data if request.blob else None)}


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
async def test_random_drops_lose_and_duplicate_nothing(seed: int) -> None:
    rng = random.Random(seed)
    async with harness([FunctionTool(echo)]) as h:
        call_id = await h.start("echo")
        for value in range(120):
            h.send_frame(value)
            await h.settle()
            if rng.random() < 0.08:
                code = rng.choice([1000, 1006, 1011])
                h.model.resumption(f"h-{value}")
                await h.lasted()  # a connection that worked: its loss is reconnected at once
                h.model.disconnect(code=code, reason=f"drop {code}")
                await h.settle()
        await h.model.wait_for(
            lambda: h.model.emissions(call_id) and h.model.emissions(call_id)[-1]["value"] == 119
        )
        delivered = h.model.emissions(call_id)
        logged = [e.payload["value"] for e in h.log.events if isinstance(e, Emission)]
        assert logged == list(range(120))
        # In order and never twice; each delivery stands for itself or for the updates it
        # coalesced, so together they account for every one of the 120.
        values = [e["value"] for e in delivered]
        assert values == sorted(set(values)) and values[-1] == 119
        stands_for = [e.get("while_away", {}).get("updates", 1) for e in delivered]
        assert sum(stands_for) == 120
        previous = [-1, *values[:-1]]
        for before, value, n in zip(previous, values, stands_for, strict=True):
            assert value - before == n  # a coalesced one replaces exactly the values it skipped
        drops = [
            e for e in h.log.events if isinstance(e, ConnectionState) and e.state == "disconnected"
        ]
        assert len(drops) == len(h.model.connections) - 1 >= 3
        # Each reconnect carried the newest handle the model had issued.
        handles = [s.resumption_handle for s in h.model.setups[1:]]
        assert all(handle is not None for handle in handles)


async def test_repeated_go_away_keeps_the_stream_and_every_emission() -> None:
    async with harness([FunctionTool(echo)]) as h:
        call_id = await h.start("echo")
        for round_ in range(10):
            h.model.resumption(f"h-{round_}")
            h.send_frame(round_)
            await h.lasted()  # GoAway comes near a connection's end, not right after setup
            h.model.go_away(time_left_s=1)
            await h.model.wait_for(lambda n=round_: len(h.model.connections) == n + 2)
        await h.settle()
        h.send_frame(99)
        await h.wait_responses(call_id, 12)
        assert [e["value"] for e in h.model.emissions(call_id)] == [*range(10), 99]
        assert h.model.setups[-1].resumption_handle == "h-9"
        assert len(h.session.running_streams()) == 1


async def test_memory_stays_bounded_during_a_long_outage() -> None:
    model = ScriptedModel(refuse_connects=set(range(1, 1000)))
    config = SessionConfig(
        reconnect=ReconnectPolicy(initial_backoff_s=1.0, max_backoff_s=1.0),
    )
    async with harness([FunctionTool(echo)], config, model=model) as h:
        call_id = await h.start("echo")
        model.resumption("h-1")
        await h.settle()
        model.disconnect()
        for value in range(2000):
            h.send_frame(value)
            await h.settle()
        # One emission waits for the model, standing for all 2000 it has not heard.
        assert h.session.outbox_depth == 1
        assert h.session.stats.emissions_coalesced == 1999
        logged = [e for e in h.log.events if isinstance(e, Emission)]
        assert len(logged) == 2000  # the event log still has every one
        model.refuse_connects.clear()
        await h.clock.run_for(2)
        await h.wait_responses(call_id, 2)
        assert h.model.emissions(call_id) == [{"value": 1999, "while_away": {"updates": 2000}}]


class SilentModel(ScriptedModel):
    """Accepts the socket but never answers setup."""

    async def connect(self, setup: LiveSetup) -> Any:
        await anyio.sleep_forever()


async def test_a_server_that_never_answers_setup_gives_up_in_bounded_time() -> None:
    config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=2, connect_timeout_s=0.05))
    with anyio.fail_after(5):
        async with Runner(SilentModel(), [], config).run_live(LiveRequestQueue()) as session:
            await session.wait_finished()
    assert session.failure is not None
    assert "no answer to setup within 0.05 s" in session.failure


class BrokenModel(ScriptedModel):
    """A model adapter with bugs: its first connect raises, its first connection's receive
    and close raise, none of them a ConnectionLost."""

    async def connect(self, setup: LiveSetup) -> Any:
        if self._attempts == 0:
            self._attempts += 1
            raise ZeroDivisionError("connect went wrong")
        conn = await super().connect(setup)
        if len(self.connections) == 1:
            first_receive = conn.receive

            async def receive() -> AsyncIterator[Any]:
                async for event in first_receive():
                    raise KeyError(f"cannot handle {type(event).__name__}")
                    yield event

            async def close() -> None:
                raise RuntimeError("close went wrong")

            conn.receive = receive  # type: ignore[method-assign]
            conn.close = close  # type: ignore[method-assign]
        return conn


async def test_a_model_that_raises_anything_is_retried_and_the_device_goes_on() -> None:
    model = BrokenModel()
    async with harness([FunctionTool(echo)], model=model) as h:
        with anyio.fail_after(10):
            await h.clock.run_for(1)  # past the back-off after the failed connect
            await model.wait_for(lambda: len(model.connections) == 1)
            model.say("hello")  # the first connection's receive raises on it
            await h.clock.run_for(1)
            await model.wait_for(lambda: len(model.connections) == 2)
        call_id = await h.start("echo")
        h.send_frame(7)
        await h.wait_responses(call_id, 2)
        assert h.session.failure is None
    reasons = [e.reason for e in h.log.events if isinstance(e, ConnectionState) and e.reason]
    assert any("ZeroDivisionError: connect went wrong" in r for r in reasons), reasons
    assert any("KeyError" in r and "ModelTextOut" in r for r in reasons), reasons
