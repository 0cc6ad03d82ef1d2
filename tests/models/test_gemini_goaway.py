"""Resume before the cut: a GoAway met by a switch-over, through the real SDK and the fake.

The fake says GoAway with 2 s left while a count streams; the session must open the resumed
connection (with the newest resumable handle) while the old one still carries emissions,
move over once it is set up and close the old one before the cut. The event log's
emissions must equal what the fake received, in order, none merged, lost or sent twice,
and none may have waited anywhere near the cut.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from google.genai import types

from live.config import ReconnectPolicy, SessionConfig
from live.events import ConnectionState, Emission
from live.input_stream import InputStream
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.fakelive import FakeLiveServer, FunctionResponseRecord, ToolCallSpec, client_for
from tests.faults.live_runs import WatchedLog
from tools.function_tool import FunctionTool

TEXT_MODEL = "gemini-live-2.5-flash-preview"
TIME_LEFT_S = 2.0
# An emission that waited for a reconnect after the cut would be ~TIME_LEFT_S late.
MAX_DELAY_S = TIME_LEFT_S / 2


async def count_people(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """Report the count each frame carries."""
    async for request in stream:
        assert request.blob is not None and request.blob.data is not None
        yield {"count": int(request.blob.data.decode())}


@dataclass
class Run:
    srv: FakeLiveServer
    queue: LiveRequestQueue
    session: LiveSession
    log: WatchedLog
    call_id: str = ""

    def responses(self) -> list[FunctionResponseRecord]:
        hits = [
            r
            for c in self.srv.connections
            for r in c.function_responses()
            if r.id == self.call_id and "count" in r.response
        ]
        return sorted(hits, key=lambda r: r.t)

    async def count(self, n: int) -> FunctionResponseRecord:
        """The count changes to ``n``; return once the fake got its emission."""
        self.queue.send_realtime(types.Blob(data=str(n).encode(), mime_type="image/jpeg"))
        return await self.srv.wait_for(
            lambda: next((r for r in self.responses() if r.response["count"] == n), None)
        )


@contextlib.asynccontextmanager
async def running(srv: FakeLiveServer) -> AsyncIterator[Run]:
    model = GeminiLiveModel(GeminiOptions(TEXT_MODEL), client=client_for(srv))
    policy = ReconnectPolicy(stable_after_s=0.0, initial_backoff_s=0.01, max_backoff_s=0.05)
    config = SessionConfig(reconnect=policy, stop_timeout_s=2.0)
    log = WatchedLog()
    queue = LiveRequestQueue()
    # epoch 0: events carry the monotonic clock the fake stamps its arrivals with.
    runner = Runner(model, [FunctionTool(count_people)], config, on_event=log.record, epoch=0.0)
    async with runner.run_live(queue) as session:
        with anyio.fail_after(10):
            await session.wait_model_connected()
        yield Run(srv, queue, session, log)


async def cut_at(srv: FakeLiveServer, index: int, deadline_s: float) -> None:
    """The server's side of GoAway: the connection is closed when the time left is up."""
    await anyio.sleep(deadline_s)
    if not srv.connection(index).closed:
        await srv.close_connection(1000, "time is up", connection=index)


@pytest.mark.anyio
async def test_go_away_switches_over_before_the_cut_and_loses_nothing(
    srv: FakeLiveServer,
) -> None:
    async with running(srv) as run, anyio.create_task_group() as tg:
        [run.call_id] = await srv.send_tool_call(ToolCallSpec("count_people", id="c1"))
        await srv.wait_function_response(run.call_id)
        await srv.send_resumption_update("h-old", resumable=True)
        await srv.send_resumption_update("h-1", resumable=True)
        for n in range(1, 4):
            await run.count(n)
        await srv.send_go_away(f"{TIME_LEFT_S:g}s")
        go_away_at = srv.connection(0).sent[-1].t
        tg.start_soon(cut_at, srv, 0, TIME_LEFT_S)
        # The count keeps changing, one change as soon as the last one arrived.
        n = 3
        while len([r for r in run.responses() if r.connection == 1]) < 5:
            n += 1
            await run.count(n)
        tg.cancel_scope.cancel()

    old, new = srv.connection(0), srv.connection(1)
    assert len(srv.connections) == 2
    assert new.resumption_handle == "h-1"
    # Opened beside the old one, which the client itself closed before the cut.
    assert old.closed_at is not None and new.opened_at < old.closed_at
    assert old.closed_at < go_away_at + TIME_LEFT_S
    assert old.close_code != 1000 or old.close_reason != "time is up"
    # Emissions went on flowing on the old connection after the GoAway.
    got = run.responses()
    assert any(r.connection == 0 and r.t > go_away_at for r in got)
    # Event log vs wire: the same emissions, in order, none merged, lost or twice.
    logged = [e for e in run.log.of(Emission) if e.id == run.call_id and "count" in e.payload]
    assert [r.response for r in got] == [e.payload for e in logged]
    assert [r.response["count"] for r in got] == list(range(1, n + 1))
    assert [r.connection for r in got] == sorted(r.connection for r in got)
    # None waited for the cut (the fake's arrival time against the log's emission time).
    delays = [r.t - e.t for r, e in zip(got, logged, strict=True)]
    assert max(delays) < MAX_DELAY_S, delays
    states = [e.state for e in run.log.of(ConnectionState)]
    assert states[:4] == ["connecting", "connected", "go_away", "connected"], states
    assert run.session.stats.reconnects == 1
