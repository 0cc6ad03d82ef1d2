"""The spending cap end to end: the real google-genai SDK against the fake Live server.

The fake scripts the model's usage metadata (a turn reported more than once); the
session runs on a ``FakeClock``, so the minute between emissions at the cap and the
rolling hour are stepped through, never waited for.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from google.genai import types

from live.config import BudgetLimits, EmitMode, ReconnectPolicy, SessionConfig
from live.events import BudgetState, Emission
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from live.util.clock import FakeClock
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.fakelive import FakeLiveServer, client_for
from tests.faults.live_runs import WatchedLog
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio

MODEL_25 = "gemini-live-2.5-flash-preview"
MODEL_31 = "gemini-3.1-flash-live-preview"
NOTE = "Device note"


@dataclass
class Run:
    srv: FakeLiveServer
    clock: FakeClock
    queue: LiveRequestQueue[Any]
    session: LiveSession
    log: WatchedLog
    people: MemoryObjectSendStream[int]

    def frame(self, n: int) -> None:
        self.queue.send_realtime(
            types.Blob(data=b"\xff\xd8#%d#\xff\xd9" % n, mime_type="image/jpeg")
        )

    async def usage(
        self, *totals: int, turn_complete: bool = True, connection: int | None = None
    ) -> None:
        """One model turn whose usage is reported once per total given."""
        for total in totals:
            await self.srv.send_usage_metadata({"totalTokenCount": total}, connection=connection)
        if turn_complete:
            await self.srv.send_turn_complete(connection=connection)

    async def state(self, state: str, count: int = 1) -> BudgetState:
        def found() -> BudgetState | None:
            hits = [e for e in self.log.of(BudgetState) if e.state == state]
            return hits[count - 1] if len(hits) >= count else None

        return await self.log.wait(lambda _events: found())

    async def settled(self) -> None:
        """Everything queued so far has gone through the session and reached the fake."""
        await self.session.wait_inputs_idle()
        await self.clock.run_for(0)
        await self.session.wait_delivered()

    def notes(self) -> list[str]:
        out: list[str] = []
        for message in self.srv.messages:
            content = message.client_content()
            out += [t for t in (content.texts() if content else []) if t.startswith(NOTE)]
            out += [
                r.text or ""
                for r in message.realtime_inputs()
                if r.kind == "text" and (r.text or "").startswith(NOTE)
            ]
        return out

    def videos(self) -> int:
        return sum(1 for m in self.srv.messages for r in m.realtime_inputs() if r.kind == "video")

    def people_sent(self, call_id: str) -> list[Any]:
        responses = [r for c in self.srv.connections for r in c.function_responses()]
        return [
            r.response.get("people")
            for r in responses
            if r.id == call_id and "people" in r.response
        ]


@contextlib.asynccontextmanager
async def running(
    srv: FakeLiveServer, limits: BudgetLimits, model: str = MODEL_25, **config: Any
) -> AsyncIterator[Run]:
    send, receive = anyio.create_memory_object_stream[int](100)

    async def people() -> AsyncIterator[dict[str, Any]]:
        """Report how many people there are, at each change."""
        async for n in receive:
            yield {"people": n}

    clock = FakeClock()
    log = WatchedLog()
    queue: LiveRequestQueue[Any] = LiveRequestQueue()
    runner = Runner(
        GeminiLiveModel(GeminiOptions(model), client=client_for(srv)),
        [FunctionTool(people)],
        SessionConfig(
            send_frames=True,
            budget=limits,
            reconnect=ReconnectPolicy(initial_backoff_s=0.01, stable_after_s=0.0),
            **config,
        ),
        clock=clock,
        on_event=log.record,
    )
    async with runner.run_live(queue) as session:
        await srv.wait_connection(1)
        with anyio.fail_after(10):
            await session.wait_model_connected()
        yield Run(srv, clock, queue, session, log, send)


async def test_the_cap_steps_down_at_80_and_100_percent_and_back_when_the_hour_frees_room(
    srv: FakeLiveServer,
) -> None:
    async with running(srv, BudgetLimits(per_hour=1000)) as run:
        (call_id,) = await srv.send_tool_call({"name": "people", "args": {}})
        await srv.wait_function_response(call_id)
        await run.people.send(1)
        await srv.wait_for(lambda: run.people_sent(call_id) == [1])
        run.frame(1)
        await srv.wait_for(lambda: run.videos() == 1)

        # One turn reported three times, growing: counted once, at its largest (800: 80 %).
        await run.usage(400, 400, 800)
        saving = await run.state("saving")
        assert (saving.limit, saving.hour_used, saving.hour_limit) == ("hour", 800, 1000)
        assert run.session.budget.meter.session == 800
        await srv.wait_for(lambda: len(run.notes()) == 1)
        # Frames stop first; emissions still come as they happen.
        for n in range(2, 5):
            await run.clock.run_for(1.5)
            run.frame(n)
        await run.settled()
        assert run.session.stats.frames_to_model == 1
        assert run.session.stats.frames_budget_held == 3
        await run.people.send(2)
        await srv.wait_for(lambda: run.people_sent(call_id) == [1, 2])
        assert run.videos() == 1

        # The next turn reaches the limit: emissions at most one a minute, the newest wins.
        await run.usage(100, 200)
        capped = await run.state("capped")
        assert capped.hour_used == 1000
        await run.people.send(3)  # the first after the cap goes at once
        await srv.wait_for(lambda: run.people_sent(call_id) == [1, 2, 3])
        t_first = run.clock.now()
        for n in (4, 5, 6):
            await run.clock.run_for(10)
            await run.people.send(n)
        await run.settled()
        assert run.people_sent(call_id) == [1, 2, 3]  # held on the device
        assert [e.payload["people"] for e in run.log.of(Emission)] == [1, 2, 3, 4, 5, 6]
        await run.clock.run_for(t_first + 60 - run.clock.now() - 0.5)
        await run.settled()
        assert run.people_sent(call_id) == [1, 2, 3]
        await run.clock.run_for(1)
        await srv.wait_for(lambda: run.people_sent(call_id) == [1, 2, 3, 6])
        assert len(run.notes()) == 1  # told once
        assert run.session.budget.snapshot()["state"] == "capped"

        # The hour frees room: back to normal, said once; frames and updates flow again.
        await run.clock.run_for(3600 - run.clock.now() + 1)
        await run.state("normal")
        await srv.wait_for(lambda: len(run.notes()) == 2)
        run.frame(9)
        await srv.wait_for(lambda: run.videos() == 2)
        await run.people.send(7)
        await srv.wait_for(lambda: run.people_sent(call_id)[-1] == 7)
        await run.clock.run_for(3600)
        assert [e.state for e in run.log.of(BudgetState)] == ["saving", "capped", "normal"]


async def test_on_a_model_that_takes_no_client_content_the_note_is_realtime_text(
    srv: FakeLiveServer,
) -> None:
    async with running(
        srv, BudgetLimits(per_session=100), MODEL_31, emit_mode=EmitMode.TEXT
    ) as run:
        await run.usage(90)
        await run.state("saving")
        await srv.wait_for(lambda: run.notes())
        assert not [m for m in srv.messages if m.kind == "client_content"]
        assert any(
            r.kind == "text" and (r.text or "").startswith(NOTE)
            for m in srv.messages
            for r in m.realtime_inputs()
        )


async def test_a_turn_cut_by_a_drop_counts_as_reported_and_the_next_connection_starts_afresh(
    srv: FakeLiveServer,
) -> None:
    async with running(srv, BudgetLimits(per_session=10_000)) as run:
        await run.usage(500, 600, turn_complete=False)
        await run.log.wait(lambda _events: run.session.budget.meter.session == 600)
        await srv.drop_connection()
        await srv.wait_connection(2)
        with anyio.fail_after(10):
            await run.session.wait_model_connected()
        await run.usage(300, 400, connection=1)  # the second connection (0-based)
        await run.log.wait(lambda _events: run.session.budget.meter.session == 1000)
        assert [e.state for e in run.log.of(BudgetState)] == []
