"""A small harness for runtime tests: a runner on a scripted model and virtual time."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from google.genai import types

from live.config import SessionConfig
from live.events import Event
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from live.store.eventlog import MemoryEventLog
from live.testing import ScriptedModel
from live.tool import Tool
from live.util.clock import FakeClock, settle


def frame_blob(value: int) -> types.Blob:
    """A fake 'JPEG' whose bytes carry a number the test tools read back."""
    return types.Blob(data=b"\xff\xd8" + str(value).encode(), mime_type="image/jpeg")


def blob_value(data: bytes | None) -> int:
    assert data is not None
    return int(data[2:].decode())


@dataclass
class Harness:
    clock: FakeClock
    model: ScriptedModel
    queue: LiveRequestQueue
    session: LiveSession
    log: MemoryEventLog
    seen_events: list[Event] = field(default_factory=list)
    event_arrived: anyio.Event = field(default_factory=anyio.Event)

    def send_frame(self, value: int) -> None:
        self.queue.send_realtime(frame_blob(value), frame=value)

    async def settle(self) -> None:
        await settle()

    async def lasted(self) -> None:
        """Let the connection last long enough to count as one that worked
        (``ReconnectPolicy.stable_after_s``): losing it then reconnects at once, where one
        lost sooner is a failed attempt, retried after a back-off."""
        await self.clock.run_for(self.session.config.reconnect.stable_after_s)

    async def wait_event(
        self, predicate: Callable[[list[Event]], Any], timeout: float = 5.0
    ) -> Any:
        """Wait until ``predicate(events seen so far)`` is truthy; return its value."""
        with anyio.fail_after(timeout):
            while True:
                result = predicate(self.seen_events)
                if result:
                    return result
                await self.event_arrived.wait()

    async def start(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Call a tool as the model and wait until it is answered and running."""
        call_id = self.model.call(name, args)
        await self.wait_responses(call_id, 1)
        await self.settle()
        return call_id

    async def wait_responses(self, call_id: str, n: int, timeout: float = 5.0) -> None:
        await self.model.wait_for(lambda: len(self.model.responses(call_id)) >= n, timeout=timeout)


@contextlib.asynccontextmanager
async def harness(
    tools: Sequence[Tool],
    config: SessionConfig | None = None,
    *,
    realtime_maxsize: int = 2,
    model: ScriptedModel | None = None,
) -> AsyncIterator[Harness]:
    clock = FakeClock(1000.0)
    model = model or ScriptedModel(clock=clock)
    model.clock = clock
    log = MemoryEventLog()
    queue = LiveRequestQueue(realtime_maxsize=realtime_maxsize, now=clock.now)
    runner = Runner(model, tools, config or SessionConfig(), clock=clock, on_event=log.record)
    async with anyio.create_task_group() as tg, runner.run_live(queue) as session:
        h = Harness(clock, model, queue, session, log)

        async def drain() -> None:
            async for event in session:
                h.seen_events.append(event)
                h.event_arrived.set()
                h.event_arrived = anyio.Event()

        tg.start_soon(drain)
        yield h
        queue.close()
