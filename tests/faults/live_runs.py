"""A live session on the real SDK against the fake Live server, and what its log said.

Shared by the fault tests of a model endpoint (``test_hostile_endpoint.py``,
``test_flapping_model.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from live.config import ReconnectPolicy, SessionConfig
from live.events import ConnectionState, Event
from live.requests import LiveRequestQueue
from live.session import LiveSession, Runner
from live.store.eventlog import MemoryEventLog
from models.gemini.model import GeminiLiveModel, GeminiOptions
from tests.fakelive import FakeLiveServer, client_for
from tools.function_tool import FunctionTool

T = TypeVar("T")
E = TypeVar("E", bound=Event)
MODEL = "gemini-live-test"


async def ping(text: str) -> dict[str, Any]:
    """Answer at once."""
    return {"pong": text}


class WatchedLog(MemoryEventLog):
    """The session's event log, with a wait woken by every event recorded."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = anyio.Event()

    def record(self, event: Event) -> None:
        super().record(event)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, predicate: Callable[[list[Event]], T | None], timeout: float = 10) -> T:
        with anyio.fail_after(timeout):
            while True:
                changed = self._changed
                value = predicate(self.events)
                if value:
                    return value
                await changed.wait()

    def states(self) -> list[ConnectionState]:
        return [e for e in self.events if isinstance(e, ConnectionState)]

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def said(log: MemoryEventLog, state: str | None = None) -> list[ConnectionState]:
    return [
        e
        for e in log.events
        if isinstance(e, ConnectionState) and (state is None or e.state == state)
    ]


@dataclass
class Run:
    session: LiveSession
    log: WatchedLog


@contextlib.asynccontextmanager
async def session_on(srv: FakeLiveServer, policy: ReconnectPolicy) -> AsyncIterator[Run]:
    model = GeminiLiveModel(GeminiOptions(MODEL), client=client_for(srv))
    log = WatchedLog()
    runner = Runner(
        model,
        [FunctionTool(ping)],
        SessionConfig(reconnect=policy, stop_timeout_s=2),
        on_event=log.record,
    )
    async with runner.run_live(LiveRequestQueue()) as session:
        yield Run(session, log)


def quick(**kwargs: Any) -> ReconnectPolicy:
    return ReconnectPolicy(initial_backoff_s=0.01, max_backoff_s=0.05, **kwargs)
