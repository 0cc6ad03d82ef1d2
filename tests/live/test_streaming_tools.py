"""The streaming-tool contract, end to end through the session with a scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from live.config import PENDING_STATUS, EmitMode, SessionConfig, StreamBounds
from live.events import Emission, ErrorEvent, StreamStopped
from live.input_stream import InputStream
from live.model import SendContent
from live.store.eventlog import SQLiteEventLog, read_events
from live.tool import ToolContext
from live.util.clock import settle
from tests.live.harness import blob_value, harness
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


class CountingTool:
    """A counting tool: reads the number in each frame, emits only changes."""

    def __init__(self) -> None:
        self.cleanups = 0
        self.seen: list[list[Any]] = []  # per call: every item the tool received
        self.streams: list[InputStream] = []

    async def __call__(
        self, stream: InputStream, min_change: int = 1
    ) -> AsyncIterator[dict[str, Any]]:
        """Count things in view; reports changes only.

        Args:
            min_change: smallest change worth reporting.
        """
        seen: list[Any] = []
        self.seen.append(seen)
        self.streams.append(stream)
        last: int | None = None
        try:
            async for request in stream:
                seen.append(request)
                value = blob_value(request.blob.data if request.blob else None)
                if last is None or abs(value - last) >= min_change:
                    yield {"people": value, "previous": last}
                    last = value
        finally:
            self.cleanups += 1


def counting_tool() -> tuple[CountingTool, FunctionTool]:
    impl = CountingTool()
    return impl, FunctionTool(impl, name="count_people")


async def test_pending_answer_comes_first_then_ordered_change_only_emissions() -> None:
    _impl, tool = counting_tool()
    async with harness([tool]) as h:
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        first = h.model.responses(call_id)[0]
        assert first.response == {"status": PENDING_STATUS}
        assert first.will_continue is True and first.scheduling == "SILENT"
        for value in [0, 0, 1, 1, 1, 3, 3, 2, 2, 2, 0]:
            h.send_frame(value)
            await h.settle()
        await h.wait_responses(call_id, 6)
        emissions = h.model.emissions(call_id)
        assert [e["people"] for e in emissions] == [0, 1, 3, 2, 0]
        assert [e["previous"] for e in emissions] == [None, 0, 1, 3, 2]
        records = h.model.responses(call_id)[1:]
        assert all(r.will_continue is True and r.scheduling == "WHEN_IDLE" for r in records)
        assert all(r.id == call_id and r.name == "count_people" for r in records)


async def test_frames_sent_before_the_call_are_not_seen() -> None:
    impl, tool = counting_tool()
    async with harness([tool], realtime_maxsize=8) as h:
        for value in [7, 8, 9]:
            h.send_frame(value)
        # These frames are still in the queue when the call starts.
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        await h.settle()
        h.send_frame(1)
        await h.wait_responses(call_id, 2)
        assert [blob_value(r.blob.data) for r in impl.seen[0]] == [1]
        assert h.model.emissions(call_id) == [{"people": 1, "previous": None}]


async def test_stop_by_name_runs_cleanup_and_nothing_follows_the_answer() -> None:
    impl, tool = counting_tool()
    async with harness([tool]) as h:
        call_id = await h.start("count_people")
        h.send_frame(2)
        await h.wait_responses(call_id, 2)
        stop_id = h.model.call("stop_streaming", {"function_name": "count_people"})
        await h.wait_responses(stop_id, 1)
        answer = h.model.responses(stop_id)[0]
        assert answer.response["status"] == "Successfully stopped streaming function count_people"
        assert answer.response["stopped"][0]["id"] == call_id
        assert impl.cleanups == 1
        assert h.session.running_streams() == []
        # Frames after the stop reach nobody and nothing more is sent for the call.
        for value in [5, 6]:
            h.send_frame(value)
            await h.settle()
        after = [r for r in h.model.responses(call_id) if r.t > answer.t]
        assert after == []
        final = h.model.responses(call_id)[-1]
        assert final.will_continue is False and final.response["status"] == "stopped"
        sent_index = [i for i, s in enumerate(h.model.sent)]
        stop_index = next(
            i
            for i, s in zip(sent_index, h.model.sent, strict=True)
            if getattr(s.message, "responses", ()) and s.message.responses[0].id == stop_id
        )
        for s in h.model.sent[stop_index + 1 :]:
            assert not any(r.id == call_id for r in getattr(s.message, "responses", ()))


async def test_misspelled_stop_lists_running_streams_and_keeps_them() -> None:
    impl, tool = counting_tool()
    async with harness([tool]) as h:
        call_id = await h.start("count_people")
        stop_id = h.model.call("stop_streaming", {"function_name": "count_peple"})
        await h.wait_responses(stop_id, 1)
        answer = h.model.responses(stop_id)[0].response
        assert answer["status"] == "No active streaming function named count_peple"
        assert answer["running"] == [{"name": "count_people", "id": call_id}]
        h.send_frame(4)
        await h.wait_responses(call_id, 2)
        assert h.model.emissions(call_id) == [{"people": 4, "previous": None}]
        assert impl.cleanups == 0


async def test_stop_when_nothing_runs() -> None:
    _, tool = counting_tool()
    async with harness([tool]) as h:
        stop_id = h.model.call("stop_streaming", {"function_name": "count_people"})
        await h.wait_responses(stop_id, 1)
        answer = h.model.responses(stop_id)[0].response
        assert answer == {
            "status": "No active streaming function named count_people",
            "running": [],
        }


async def test_two_calls_both_run_and_one_stop_ends_both() -> None:
    impl, tool = counting_tool()
    async with harness([tool]) as h:
        first, second = h.model.call_many([("count_people", {}), ("count_people", {})])
        await h.wait_responses(first, 1)
        await h.wait_responses(second, 1)
        await h.settle()
        h.send_frame(3)
        await h.wait_responses(first, 2)
        await h.wait_responses(second, 2)
        assert impl.streams[0] is not impl.streams[1]
        stop_id = h.model.call("stop_streaming", {"function_name": "count_people"})
        await h.wait_responses(stop_id, 1)
        stopped = h.model.responses(stop_id)[0].response["stopped"]
        assert sorted(s["id"] for s in stopped) == sorted([first, second])
        assert impl.cleanups == 2
        assert h.session.running_streams() == []


async def test_second_call_refused_explicitly_when_concurrency_is_off() -> None:
    _impl, tool = counting_tool()
    async with harness([tool], SessionConfig(allow_concurrent_calls=False)) as h:
        first = h.model.call("count_people")
        await h.wait_responses(first, 1)
        second = h.model.call("count_people")
        await h.wait_responses(second, 1)
        refusal = h.model.responses(second)[0].response
        assert refusal["status"] == "error"
        assert first in refusal["error"] and "stop_streaming" in refusal["error"]
        assert [s["id"] for s in h.session.running_streams()] == [first]


async def test_a_flood_of_calls_runs_only_as_many_streams_as_the_bound_the_rest_refused() -> None:
    """A model that calls count_people 500 times in one message: each stream consumes
    every frame, so beyond the bound each call is refused with a reason, at once."""
    impl, tool = counting_tool()
    async with harness([tool], SessionConfig(max_streams=8)) as h:
        calls = h.model.call_many([("count_people", {})] * 500)
        for call_id in calls:
            await h.wait_responses(call_id, 1)
        await h.settle()
        first = [h.model.responses(c)[0].response for c in calls]
        refused = [r for r in first if r.get("status") == "error"]
        assert len(refused) == 492 and len(h.session.running_streams()) == 8
        assert "8 streams are running" in refused[0]["error"]
        assert "stop_streaming" in refused[0]["error"]
        h.send_frame(3)  # the eight that run still count
        for call_id in calls[:8]:
            await h.wait_responses(call_id, 2)
        # Once one stops, a new call runs again.
        stop_id = h.model.call("stop_streaming", {"call_id": calls[0]})
        await h.wait_responses(stop_id, 1)
        again = await h.start("count_people")
        assert h.model.responses(again)[0].response.get("status") != "error"
        assert impl.cleanups >= 1


async def test_new_call_after_stop_and_after_completion_gets_a_fresh_stream() -> None:
    impl, tool = counting_tool()

    async def three_frames(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
        """Report the first three frames, then finish."""
        n = 0
        async for request in stream:
            n += 1
            yield {"value": blob_value(request.blob.data if request.blob else None)}
            if n == 3:
                return

    finite = FunctionTool(three_frames)
    async with harness([tool, finite]) as h:
        a = await h.start("count_people")
        h.send_frame(1)
        await h.wait_responses(a, 2)
        stop = h.model.call("stop_streaming", {"function_name": "count_people"})
        await h.wait_responses(stop, 1)
        b = await h.start("count_people")
        h.send_frame(2)
        await h.wait_responses(b, 2)
        assert impl.streams[0] is not impl.streams[1]
        assert impl.streams[0].closed and not impl.streams[1].closed
        assert [blob_value(r.blob.data) for r in impl.seen[1]] == [2]

        c = await h.start("three_frames")
        for value in [10, 11, 12]:
            h.send_frame(value)
            await h.settle()
        await h.wait_responses(c, 5)
        assert h.model.responses(c)[-1].response == {"status": "finished"}
        assert h.model.responses(c)[-1].will_continue is False
        assert h.model.responses(c)[-1].scheduling == "SILENT"
        d = await h.start("three_frames")
        h.send_frame(20)
        await h.wait_responses(d, 2)
        assert h.model.emissions(d)[0] == {"value": 20}


async def test_exception_mid_stream_and_at_start_reach_the_model_and_a_second_call_works() -> None:
    calls = 0

    async def flaky(
        stream: InputStream, fail_at_start: bool = False
    ) -> AsyncIterator[dict[str, Any]]:
        """Fails on a frame with value 13, or at once."""
        nonlocal calls
        calls += 1
        if fail_at_start:
            raise RuntimeError("camera busy")
        async for request in stream:
            value = blob_value(request.blob.data if request.blob else None)
            if value == 13:
                raise ValueError("unlucky frame")
            yield {"value": value}

    async with harness([FunctionTool(flaky)]) as h:
        a = await h.start("flaky")
        h.send_frame(1)
        await h.wait_responses(a, 2)
        h.send_frame(13)
        await h.wait_responses(a, 3)
        final = h.model.responses(a)[-1]
        assert final.response == {"status": "error", "error": "ValueError: unlucky frame"}
        assert final.will_continue is False
        b = h.model.call("flaky", {"fail_at_start": True})
        await h.wait_responses(b, 2)
        assert h.model.responses(b)[-1].response == {
            "status": "error",
            "error": "RuntimeError: camera busy",
        }
        c = await h.start("flaky")
        h.send_frame(5)
        await h.wait_responses(c, 2)
        assert h.model.emissions(c) == [{"value": 5}]
        errors = [e for e in h.log.events if isinstance(e, ErrorEvent)]
        assert [e.id for e in errors] == [a, b]
        assert calls == 3


async def test_input_stream_gets_only_frames_never_its_own_output() -> None:
    impl, tool = counting_tool()
    async with harness([tool]) as h:
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        await h.settle()
        for value in range(6):
            h.send_frame(value)
            h.queue.send_content("what do you see?")
            h.queue.send_activity_start()
            h.queue.send_activity_end()
            await h.settle()
        await h.wait_responses(call_id, 7)
        kinds = {r.kind.value for r in impl.seen[0]}
        mimes = {r.mime_type for r in impl.seen[0]}
        assert kinds == {"realtime"} and mimes == {"image/jpeg"}
        assert len(impl.seen[0]) == 6
        # Text went to the model, not to the tool.
        assert h.model.texts().count("what do you see?") == 6


async def test_audio_is_not_fed_to_an_image_tool() -> None:
    from google.genai import types

    impl, tool = counting_tool()
    async with harness([tool]) as h:
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        await h.settle()
        h.queue.send_realtime(types.Blob(data=b"\x00\x01", mime_type="audio/pcm;rate=16000"))
        h.send_frame(1)
        await h.wait_responses(call_id, 2)
        assert [r.mime_type for r in impl.seen[0]] == ["image/jpeg"]


async def test_slow_detector_keeps_its_queue_bounded_and_works_on_fresh_frames() -> None:
    """50 ms per frame at 30 fps for 10 s of virtual time."""

    async def detector(stream: InputStream, context: ToolContext) -> AsyncIterator[dict[str, Any]]:
        """Reports which frame it looked at."""
        async for request in stream:
            await context.clock.sleep(0.05)
            yield {"frame": request.seq, "t_enqueue": request.t_enqueue}

    async with harness([FunctionTool(detector)]) as h:
        call_id = h.model.call("detector")
        await h.wait_responses(call_id, 1)
        await h.settle()
        streams = list(h.session.input_streams().values())
        start = h.clock.now()
        for i in range(300):
            await h.clock.run_for(start + i / 30 - h.clock.now())
            h.send_frame(i)
            await h.settle()
        await h.clock.run_for(0.2)
        stream = streams[0]
        assert stream.stats.max_depth <= stream.maxsize == 1
        assert stream.stats.received == 300
        assert stream.stats.dropped >= 90  # it cannot keep up, so it must skip
        assert stream.stats.delivered <= 10 / 0.05 + 1
        records = h.model.responses(call_id)[1:]
        assert len(records) >= 150  # one result per 50 ms for 10 s
        latencies = [r.t - r.response["t_enqueue"] for r in records]
        assert max(latencies) <= 0.1 + 1e-9  # never more than two detector periods old
        assert h.session.stats.frames_in == 300


async def test_closing_the_queue_stops_all_streams_with_cleanup() -> None:
    impl, tool = counting_tool()
    async with harness([tool]) as h:
        a, b = h.model.call_many([("count_people", {}), ("count_people", {})])
        await h.wait_responses(b, 1)
        await h.wait_responses(a, 1)
        h.queue.close()
        await h.session.wait_finished()
        assert impl.cleanups == 2
        stopped = [e for e in h.log.events if isinstance(e, StreamStopped)]
        assert {e.id for e in stopped} == {a, b}
        assert all(e.reason == "session closed" for e in stopped)


async def test_leaving_the_block_stops_streams_and_nothing_runs_after() -> None:
    impl, tool = counting_tool()
    from live.requests import LiveRequestQueue
    from live.session import Runner
    from live.testing import ScriptedModel
    from live.util.clock import FakeClock

    model = ScriptedModel(clock=FakeClock())
    queue = LiveRequestQueue()
    async with Runner(model, [tool]).run_live(queue) as session:
        call_id = model.call("count_people")
        await model.wait_for(lambda: len(model.responses(call_id)) >= 1)
        assert len(session.running_streams()) == 1
    assert impl.cleanups == 1
    assert session.running_streams() == []
    assert all(c.closed for c in model.connections)


async def test_min_interval_keeps_the_last_value() -> None:
    _impl, tool = counting_tool()
    config = SessionConfig(stream_bounds=StreamBounds(min_interval_s=1.0))
    async with harness([tool], config) as h:
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        await h.settle()
        for value in [1, 2, 3, 4]:  # all within 0.3 s
            h.send_frame(value)
            await h.clock.run_for(0.1)
        assert [e["people"] for e in h.model.emissions(call_id)] == [1]
        await h.clock.run_for(1.0)
        assert [e["people"] for e in h.model.emissions(call_id)] == [1, 4]
        emission_times = [r.t for r in h.model.responses(call_id)[1:]]
        assert emission_times[1] - emission_times[0] >= 1.0


async def test_max_emissions_and_lifetime_end_the_stream_with_a_reason() -> None:
    impl, tool = counting_tool()
    config = SessionConfig(stream_bounds=StreamBounds(max_emissions=2, max_lifetime_s=30))
    async with harness([tool], config) as h:
        a = h.model.call("count_people")
        await h.wait_responses(a, 1)
        await h.settle()
        for value in [1, 2, 3]:
            h.send_frame(value)
            await h.settle()
        await h.wait_responses(a, 4)
        final = h.model.responses(a)[-1]
        assert final.response == {"status": "stopped", "reason": "max_emissions (2) reached"}
        assert impl.cleanups == 1
        b = h.model.call("count_people")
        await h.wait_responses(b, 1)
        await h.clock.run_for(31)
        await h.wait_responses(b, 2)
        assert h.model.responses(b)[-1].response == {
            "status": "stopped",
            "reason": "max_lifetime (30 s) reached",
        }


async def test_session_emission_budget() -> None:
    _impl, tool = counting_tool()
    async with harness([tool], SessionConfig(session_emission_budget=3)) as h:
        a = h.model.call("count_people")
        await h.wait_responses(a, 1)
        await h.settle()
        for value in range(5):
            h.send_frame(value)
            await h.settle()
        await h.wait_responses(a, 5)
        assert (
            h.model.responses(a)[-1].response["reason"] == "session emission budget (3) exhausted"
        )


async def test_text_mode_never_completes_a_turn() -> None:
    _impl, tool = counting_tool()
    async with harness([tool], SessionConfig(emit_mode=EmitMode.TEXT)) as h:
        call_id = h.model.call("count_people")
        await h.wait_responses(call_id, 1)
        assert h.model.responses(call_id)[0].will_continue is None
        await h.settle()
        h.send_frame(2)
        await h.model.wait_for(lambda: h.model.content_messages())
        message = h.model.content_messages()[0]
        assert isinstance(message, SendContent)
        assert message.turn_complete is False
        assert message.content.role == "user"
        assert h.model.texts() == [
            'Function count_people returned: {"people": 2, "previous": null}'
        ]
        assert h.model.setups[0].tools[0].behavior is None


async def test_model_cancellation_stops_the_call() -> None:
    _impl, tool = counting_tool()
    async with harness([tool]) as h:
        a, b = h.model.call_many([("count_people", {}), ("count_people", {})])
        await h.wait_responses(b, 1)
        h.model.cancel(a)
        await h.wait_event(lambda events: any(isinstance(e, StreamStopped) for e in events))
        assert [s["id"] for s in h.session.running_streams()] == [b]
        stopped = [e for e in h.log.events if isinstance(e, StreamStopped)]
        assert stopped[0].id == a and stopped[0].reason == "cancelled by model"


async def test_event_log_in_sqlite_holds_every_emission(tmp_path: Any) -> None:
    _impl, tool = counting_tool()
    path = tmp_path / "events.sqlite"
    db = SQLiteEventLog(path)
    from live.requests import LiveRequestQueue
    from live.session import Runner
    from live.testing import ScriptedModel
    from live.util.clock import FakeClock
    from tests.live.harness import frame_blob

    clock = FakeClock()
    model = ScriptedModel(clock=clock)
    queue = LiveRequestQueue(now=clock.now)
    emitted: list[Emission] = []
    async with Runner(model, [tool], clock=clock, on_event=db.record).run_live(queue) as session:
        call_id = model.call("count_people")
        await model.wait_for(lambda: model.responses(call_id))
        await settle()
        for value in [1, 1, 2, 5, 5, 3]:
            queue.send_realtime(frame_blob(value))
            await settle()
        await model.wait_for(lambda: len(model.responses(call_id)) >= 5)
        queue.close()
        async for event in session:
            if isinstance(event, Emission):
                emitted.append(event)
    db.close()
    rows = list(read_events(path, kind="emission"))
    assert [r["payload"] for r in rows] == [e.payload for e in emitted]
    assert [r["payload"]["people"] for r in rows] == [1, 2, 5, 3]
    assert all(r["id"] == call_id for r in rows)
    calls = list(read_events(path, kind="tool_call"))
    assert calls[0]["name"] == "count_people"
    kinds = {r["type"] for r in read_events(path)}
    assert {"stream_started", "stream_stopped", "tool_result"} <= kinds
