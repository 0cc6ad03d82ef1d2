"""Session behaviour around the tools: dispatch, errors, model lane, reconnects."""

from __future__ import annotations

import itertools
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from live.config import ReconnectPolicy, SessionConfig
from live.events import ConnectionState, Emission, ErrorEvent, JobProgress, JobUpdate
from live.input_stream import InputStream
from live.model import SendRealtime
from live.requests import LiveRequestQueue
from live.session import Runner
from live.testing import ScriptedModel
from live.tool import ToolContext
from live.util.clock import FakeClock
from tests.live.harness import blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers (a sync tool: runs in a worker thread)."""
    assert threading.current_thread() is not threading.main_thread()
    return {"sum": a + b}


async def shout(text: str) -> str:
    """An async tool with a plain return value."""
    return text.upper()


def explode() -> None:
    """Fails with a message that contains a secret."""
    raise RuntimeError("upstream said: key=AIzaSyA-very-secret-value-1234567890")


async def counter(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Emits every frame's value."""
    async for request in stream:
        yield {"value": blob_value(request.blob.data if request.blob else None)}


async def test_regular_tools_answer_the_call() -> None:
    tools = [FunctionTool(add), FunctionTool(shout), FunctionTool(explode)]
    async with harness(tools) as h:
        a = h.model.call("add", {"a": 2, "b": 3})
        b = h.model.call("shout", {"text": "hi"})
        c = h.model.call("explode")
        for call_id in (a, b, c):
            await h.wait_responses(call_id, 1)
        assert h.model.responses(a)[0].response == {"sum": 5}
        assert h.model.responses(b)[0].response == {"result": "HI"}
        error = h.model.responses(c)[0].response
        assert error["status"] == "error"
        assert error["error"].startswith("RuntimeError: upstream said: key=***")
        assert "AIza" not in error["error"]
        # No stop_streaming without a streaming tool.
        assert [d.name for d in h.model.setups[0].tools] == ["add", "shout", "explode"]


async def test_stop_streaming_is_declared_with_streaming_tools() -> None:
    async with harness([FunctionTool(counter)]) as h:
        names = [d.name for d in h.model.setups[0].tools]
        assert names == ["counter", "stop_streaming"]


async def test_unknown_tool_and_bad_arguments_get_an_answer_not_silence() -> None:
    async with harness([FunctionTool(add), FunctionTool(counter)]) as h:
        a = h.model.call("subtract", {"a": 1})
        b = h.model.call("add", {"a": "one", "b": 2})
        c = h.model.call("stop_streaming", {"function_name": 3})
        for call_id in (a, b, c):
            await h.wait_responses(call_id, 1)
        assert h.model.responses(a)[0].response == {
            "status": "error",
            "error": "Unknown tool 'subtract'. Available tools: add, counter, stop_streaming",
        }
        assert h.model.responses(b)[0].response["error"] == (
            "add: a must be an integer, got str 'one'"
        )
        assert "function_name must be a string" in h.model.responses(c)[0].response["error"]
        errors = [e for e in h.log.events if isinstance(e, ErrorEvent)]
        assert len(errors) == 3


async def test_frames_reach_the_model_only_when_asked_at_most_once_per_interval() -> None:
    config = SessionConfig(send_frames=True, model_frame_interval_s=1.0)
    async with harness([FunctionTool(counter)], config) as h:
        start = h.clock.now()
        for i in range(50):  # 10 fps for 5 s
            await h.clock.run_for(start + i / 10 - h.clock.now())
            h.send_frame(i)
            await h.settle()
        await h.clock.run_for(1.0)
        frames = h.model.frames()
        assert 5 <= len(frames) <= 6
        times = [f.t for f in frames]
        assert all(b - a >= 1.0 - 1e-9 for a, b in itertools.pairwise(times))
        # Latest wins: each forwarded frame is the newest one at its send time.
        values = [
            blob_value(f.message.blob.data) for f in frames if isinstance(f.message, SendRealtime)
        ]
        assert values[0] == 0 and values[-1] == 49


@pytest.mark.parametrize("config", [SessionConfig(), SessionConfig(send_frames=True, privacy=True)])
async def test_no_frames_to_the_model_by_default_or_in_privacy_mode(config: SessionConfig) -> None:
    async with harness([FunctionTool(counter)], config) as h:
        call_id = await h.start("counter")
        for i in range(20):
            h.send_frame(i)
            await h.settle()
        await h.wait_responses(call_id, 21)
        assert h.model.frames() == []


async def test_reconnect_delivers_every_emission_exactly_once_with_the_latest_handle() -> None:
    async with harness([FunctionTool(counter)]) as h:
        call_id = await h.start("counter")
        h.model.resumption("handle-1")
        h.model.resumption("handle-2")
        h.send_frame(1)
        await h.wait_responses(call_id, 2)
        await h.lasted()
        h.model.disconnect(code=1011, reason="internal error")
        # Frames keep flowing while the connection is down; the stream keeps running.
        for value in range(2, 8):
            h.send_frame(value)
            await h.settle()
        await h.model.wait_for(lambda: len(h.model.connections) == 2)
        await h.wait_responses(call_id, 8)
        assert h.model.setups[-1].resumption_handle == "handle-2"
        values = [e["value"] for e in h.model.emissions(call_id)]
        assert values == list(range(1, 8))
        log_values = [e.payload["value"] for e in h.log.events if isinstance(e, Emission)]
        assert log_values == values
        states = [e.state for e in h.log.events if isinstance(e, ConnectionState)]
        assert states[:2] == ["connecting", "connected"]
        assert "disconnected" in states and states.count("connected") == 2
        assert h.session.stats.reconnects == 1


async def test_a_send_that_fails_is_retried_on_the_new_connection() -> None:
    model = ScriptedModel()
    async with harness([FunctionTool(counter)], model=model) as h:
        call_id = await h.start("counter")
        model.resumption("h-1")
        await h.lasted()
        model.fail_sends_after = model.sends_ok  # the very next send drops the connection
        h.send_frame(42)
        await h.wait_responses(call_id, 2)
        assert len(model.connections) == 2
        assert h.model.emissions(call_id) == [{"value": 42}]
        assert [r.connection for r in h.model.responses(call_id)] == [0, 1]


async def test_go_away_reconnects_before_the_server_cuts_us_off() -> None:
    async with harness([FunctionTool(counter)]) as h:
        call_id = await h.start("counter")
        h.model.resumption("h-7")
        await h.lasted()
        h.model.go_away(time_left_s=5)
        await h.model.wait_for(lambda: len(h.model.connections) == 2)
        await h.settle()
        h.send_frame(9)
        await h.wait_responses(call_id, 2)
        assert h.model.responses(call_id)[-1].connection == 1
        assert h.model.setups[1].resumption_handle == "h-7"


async def test_an_outage_collapses_emissions_and_the_outbox_bound_drops_the_oldest_saying_so() -> (
    None
):
    model = ScriptedModel(refuse_connects={1, 2})
    config = SessionConfig(
        outbox_max=4, reconnect=ReconnectPolicy(max_attempts=5, initial_backoff_s=1.0)
    )
    async with harness([FunctionTool(counter)], config, model=model) as h:
        call_id = await h.start("counter")
        model.resumption("h-1")
        await h.lasted()
        model.disconnect()
        await h.settle()
        for value in range(10):
            h.send_frame(value)
            h.queue.send_content(f"note {value}", turn_complete=False)
            await h.settle()
        # Ten notes and one merged emission wait: the bound keeps the newest four notes.
        assert h.session.outbox_depth == 5 and h.session.stats.outbox_dropped == 6
        await h.clock.run_for(5)
        await h.wait_responses(call_id, 2)
        await h.model.wait_for(lambda: len(h.model.texts()) == 4)
        values = [e["value"] for e in h.model.emissions(call_id)]
        # Older values were collapsed, the newest always survives; order is kept.
        assert values[-1] == 9 and values == sorted(values) and len(values) <= 4
        assert h.model.texts() == [f"note {value}" for value in range(6, 10)]
        assert h.session.stats.reconnects == 1
        logged = [e.payload["value"] for e in h.log.events if isinstance(e, Emission)]
        assert logged == list(range(10))  # the log has every one of them
        said = [e.message for e in h.log.events if isinstance(e, ErrorEvent)]
        # Said at the first drop (and the 10th, 100th...), every one counted.
        assert said == [
            "outbox full (4 messages waiting for the model): dropped the oldest, text; "
            "1 dropped so far"
        ]


async def test_giving_up_ends_the_session_cleanly_with_a_reason() -> None:
    model = ScriptedModel(refuse_connects={1, 2, 3})
    config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=3, initial_backoff_s=0.5))
    async with harness([FunctionTool(counter)], config, model=model) as h:
        await h.start("counter")
        model.disconnect()
        await h.clock.run_for(10)
        await h.session.wait_finished()
        assert h.session.failure is not None
        assert "after 3 attempts" in h.session.failure
        assert h.session.running_streams() == []
        states = [e.state for e in h.log.events if isinstance(e, ConnectionState)]
        assert states[-2:] == ["failed", "closed"]


async def test_a_required_model_that_cannot_connect_ends_the_session_with_one_clear_error() -> None:
    model = ScriptedModel(refuse_connects={0, 1})
    config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=2, initial_backoff_s=0.0))
    async with Runner(model, [], config).run_live(LiveRequestQueue()) as session:
        await session.wait_finished()
    assert session.failure is not None
    assert "could not connect to the model after 2 attempts" in session.failure


async def test_request_queue_lanes() -> None:
    clock = FakeClock()
    queue = LiveRequestQueue(realtime_maxsize=2, now=clock.now)
    from tests.live.harness import frame_blob

    for i in range(5):
        queue.send_realtime(frame_blob(i))
    for i in range(3):
        queue.send_content(f"text {i}")
    queue.close()
    items = [item async for item in queue]
    # Content is lossless and comes first; the realtime lane kept only the newest two.
    assert [i.kind.value for i in items] == ["content"] * 3 + ["realtime"] * 2
    assert [blob_value(i.blob.data) for i in items[3:] if i.blob] == [3, 4]
    assert queue.stats.realtime_dropped == 3
    with pytest.raises(anyio.ClosedResourceError):
        queue.send_content("too late")


async def test_a_fresh_model_session_ends_the_old_calls_instead_of_answering_unknown_ids() -> None:
    async with harness([FunctionTool(counter)]) as h:
        old = await h.start("counter")
        h.send_frame(1)
        await h.wait_responses(old, 2)
        await h.lasted()
        h.model.disconnect(code=1011)  # no resumption handle was ever issued
        for value in (2, 3):
            h.send_frame(value)
            await h.settle()
        await h.model.wait_for(lambda: len(h.model.connections) == 2)
        await h.wait_event(lambda events: any(e.type == "stream_stopped" for e in events))
        stopped = [e for e in h.log.events if e.type == "stream_stopped"]
        assert stopped[0].to_dict()["reason"] == "model session restarted"
        assert all(r.connection == 0 for r in h.model.responses(old))
        # The new session calls the tool again and it works.
        new = await h.start("counter")
        h.send_frame(4)
        await h.wait_responses(new, 2)
        assert h.model.emissions(new) == [{"value": 4}]
        assert h.model.setups[1].resumption_handle is None


class RefusesHandles(ScriptedModel):
    async def connect(self, setup: Any) -> Any:
        if setup.resumption_handle is not None:
            from live.model import ModelSetupError

            self.setups.append(setup)
            raise ModelSetupError("session handle expired")
        return await super().connect(setup)


async def test_a_refused_resumption_handle_falls_back_to_a_fresh_session() -> None:
    model = RefusesHandles()
    async with harness([FunctionTool(counter)], model=model) as h:
        await h.start("counter")
        model.resumption("stale")
        await h.lasted()
        model.disconnect(code=1006)
        await h.model.wait_for(lambda: len(model.connections) == 2)
        assert [s.resumption_handle for s in model.setups] == [None, "stale", None]
        assert h.session.failure is None


async def test_a_server_that_drops_every_connection_at_once_is_given_up_on() -> None:
    model = ScriptedModel()
    config = SessionConfig(reconnect=ReconnectPolicy(max_attempts=4, initial_backoff_s=0.1))
    async with harness([], config, model=model) as h:
        for _ in range(10):
            if h.session.failure is not None:
                break
            model.disconnect(code=1008)
            await h.clock.run_for(1.0)  # past any backoff; connects are instant here
        await h.session.wait_finished()
        assert h.session.failure is not None
        assert "keeps dropping the connection" in h.session.failure
        assert len(model.connections) == 4  # attempts carried over: no endless loop


async def test_a_long_running_tool_in_live_mode_answers_with_a_ticket_then_the_result() -> None:
    release = anyio.Event()

    async def survey(minutes: float, context: ToolContext) -> dict[str, Any]:
        """Survey for a while."""
        context.progress(0.5, "half way")
        await release.wait()
        return {"max": 3}

    async with harness([FunctionTool(survey, long_running=True)]) as h:
        call_id = h.model.call("survey", {"minutes": 1})
        await h.wait_responses(call_id, 1)
        (ticket,) = h.model.responses(call_id)
        assert ticket.response["status"] == "started" and ticket.will_continue
        release.set()
        await h.wait_responses(call_id, 2)
        final = h.model.responses(call_id)[1]
        assert final.response == {
            "max": 3,
            "job_id": ticket.response["job_id"],
            "status": "succeeded",
        }
        assert not final.will_continue
        states = [e.state for e in h.log.events if isinstance(e, JobUpdate)]
        assert states == ["running", "succeeded"]
        # Progress reached the log, not the model.
        (progress,) = [e for e in h.log.events if isinstance(e, JobProgress)]
        assert (progress.fraction, progress.message) == (0.5, "half way")
        assert not any("half way" in str(r.response) for r in h.model.responses())
