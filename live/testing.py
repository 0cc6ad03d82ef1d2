"""A scripted, recording LiveModel for tests and benchmarks.

The test plays the model: it injects function calls, cancellations, text,
resumption handles, GoAway and disconnects, and reads back every message the
session sent, with the time it arrived and the connection it arrived on.
Waiting is event-driven (``wait_for``), never a fixed sleep.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from live import wire
from live.model import (
    ConnectionLost,
    FunctionCallRequest,
    LiveSetup,
    ModelEvent,
    ModelGoAway,
    ModelResumptionUpdate,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTurnComplete,
    Outbound,
    SendContent,
    SendRealtime,
    SendToolResponse,
)
from live.turns.model import TurnModelError, TurnReply, TurnRequest
from live.util.clock import Clock, MonotonicClock


@dataclass(frozen=True)
class Sent:
    t: float
    connection: int
    message: Outbound


@dataclass(frozen=True)
class ResponseRecord:
    """One FunctionResponse as the model received it."""

    t: float
    connection: int
    id: str
    name: str
    response: dict[str, Any]
    will_continue: bool | None
    scheduling: str | None


@dataclass
class _Drop:
    code: int | None
    reason: str
    retryable: bool = True


class ScriptedConnection:
    def __init__(self, model: ScriptedModel, index: int, setup: LiveSetup) -> None:
        self.model = model
        self.index = index
        self.setup = setup
        self.closed = False
        self.dropped: _Drop | None = None
        # Unbounded, like the local model's: a script may say more than a buffer would hold
        # before the session reads it.
        self._send_stream, self._recv_stream = anyio.create_memory_object_stream[
            ModelEvent | _Drop
        ](math.inf)

    def inject(self, item: ModelEvent | _Drop) -> None:
        self._send_stream.send_nowait(item)

    async def send(self, message: Outbound) -> None:
        if self.closed:
            raise ConnectionLost("connection is closed", code=1000)
        if self.dropped is not None:
            raise ConnectionLost(self.dropped.reason, code=self.dropped.code)
        if (
            self.model.fail_sends_after is not None
            and self.model.sends_ok >= self.model.fail_sends_after
        ):
            self.model.fail_sends_after = None
            self.drop(1006, "abnormal closure during send")
            raise ConnectionLost("abnormal closure during send", code=1006)
        self.model.sends_ok += 1
        self.model._record(self.index, message)
        await anyio.lowlevel.checkpoint()

    async def receive(self) -> AsyncIterator[ModelEvent]:
        async for item in self._recv_stream:
            if isinstance(item, _Drop):
                raise ConnectionLost(item.reason, code=item.code, retryable=item.retryable)
            yield item

    def drop(
        self, code: int | None = 1006, reason: str = "connection dropped", *, retryable: bool = True
    ) -> None:
        if self.dropped is None:
            self.dropped = _Drop(code, reason, retryable)
            self.inject(self.dropped)

    async def close(self) -> None:
        self.closed = True
        self._send_stream.close()


@dataclass
class ScriptedModel:
    """Implements ``live.model.LiveModel``; ``name`` is what the session reports."""

    name: str = "scripted"
    clock: Clock = field(default_factory=MonotonicClock)
    # Connection attempts (0-based) listed here fail with a retryable error.
    refuse_connects: set[int] = field(default_factory=set)
    # After this many successful sends, the next one drops the connection (once).
    fail_sends_after: int | None = None
    # Hook: record frames or not (benchmarks on many frames may skip storing blobs).
    keep_frames: bool = True

    def __post_init__(self) -> None:
        self.connections: list[ScriptedConnection] = []
        self.setups: list[LiveSetup] = []
        self.sent: list[Sent] = []
        self.frames_received = 0
        self.sends_ok = 0
        self.on_send: Callable[[Sent], None] | None = None
        self._attempts = 0
        self._ids = itertools.count(1)
        self._changed = anyio.Event()

    # --------------------------------------------------------- LiveModel API

    async def connect(self, setup: LiveSetup) -> ScriptedConnection:
        attempt = self._attempts
        self._attempts += 1
        self.setups.append(setup)
        if attempt in self.refuse_connects:
            self._notify()
            raise ConnectionLost("connection refused", code=None)
        conn = ScriptedConnection(self, len(self.connections), setup)
        self.connections.append(conn)
        self._notify()
        return conn

    # ------------------------------------------------------------ scripting

    @property
    def current(self) -> ScriptedConnection:
        live = [c for c in self.connections if not c.closed and c.dropped is None]
        if not live:
            raise RuntimeError("no open connection")
        return live[-1]

    def call(self, name: str, args: dict[str, Any] | None = None, *, id: str | None = None) -> str:
        call_id = id or f"call-{next(self._ids)}"
        self.current.inject(ModelToolCall((FunctionCallRequest(call_id, name, dict(args or {})),)))
        return call_id

    def call_many(self, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        requests = tuple(
            FunctionCallRequest(f"call-{next(self._ids)}", name, dict(args)) for name, args in calls
        )
        self.current.inject(ModelToolCall(requests))
        return [r.id for r in requests]

    def cancel(self, *ids: str) -> None:
        self.current.inject(ModelToolCancellation(tuple(ids)))

    def say(self, text: str, *, turn_complete: bool = True) -> None:
        self.current.inject(ModelTextOut(text))
        if turn_complete:
            self.current.inject(ModelTurnComplete())

    def resumption(self, handle: str, *, resumable: bool = True) -> None:
        self.current.inject(ModelResumptionUpdate(handle, resumable))

    def go_away(self, time_left_s: float = 10.0) -> None:
        self.current.inject(ModelGoAway(time_left_s))

    def disconnect(
        self, code: int | None = 1006, reason: str = "connection dropped", *, retryable: bool = True
    ) -> None:
        self.current.drop(code, reason, retryable=retryable)

    # -------------------------------------------------------------- reading

    def _record(self, index: int, message: Outbound) -> None:
        if isinstance(message, SendRealtime):
            self.frames_received += 1
            if not self.keep_frames:
                self._notify()
                return
        item = Sent(self.clock.now(), index, message)
        self.sent.append(item)
        if self.on_send is not None:
            self.on_send(item)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[], Any], *, timeout: float = 10.0) -> Any:
        """Wait until ``predicate()`` is truthy (re-checked on every message); return it."""
        with anyio.fail_after(timeout):
            while True:
                result = predicate()
                if result:
                    return result
                await self._changed.wait()

    def responses(self, call_id: str | None = None) -> list[ResponseRecord]:
        records = []
        for item in self.sent:
            if not isinstance(item.message, SendToolResponse):
                continue
            for r in item.message.responses:
                if call_id is not None and r.id != call_id:
                    continue
                records.append(
                    ResponseRecord(
                        t=item.t,
                        connection=item.connection,
                        id=r.id or "",
                        name=r.name or "",
                        response=dict(r.response or {}),
                        will_continue=r.will_continue,
                        scheduling=r.scheduling.value if r.scheduling is not None else None,
                    )
                )
        return records

    def emissions(self, call_id: str) -> list[dict[str, Any]]:
        """Payloads sent for a call id after its pending answer, in order."""
        return [r.response for r in self.responses(call_id)[1:]]

    def texts(self) -> list[str]:
        out = []
        for item in self.sent:
            if isinstance(item.message, SendContent):
                for part in item.message.content.parts or []:
                    if part.text:
                        out.append(part.text)
        return out

    def content_messages(self) -> list[SendContent]:
        return [i.message for i in self.sent if isinstance(i.message, SendContent)]

    def frames(self) -> list[Sent]:
        return [i for i in self.sent if isinstance(i.message, SendRealtime)]


# ------------------------------------------------------------------------------------
# Request-response


TurnScript = TurnReply | Exception | Callable[[TurnRequest], "TurnReply | Exception"]


def function_responses(request: TurnRequest) -> list[wire.FunctionResponse]:
    return request.function_responses()


def last_function_responses(request: TurnRequest) -> list[wire.FunctionResponse]:
    return request.last_function_responses()


@dataclass
class ScriptedTurnModel:
    """A request-response model played by the test.

    Each ``generate`` takes the next item of ``script``: a reply, an exception
    to raise, or a function of the request that returns either. When the
    script is empty, ``default`` answers (if set). Every request is recorded.
    """

    script: list[TurnScript] = field(default_factory=list)
    default: Callable[[TurnRequest], TurnReply | Exception] | None = None
    name: str = "scripted-turns"
    requests: list[TurnRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = anyio.Event()

    async def generate(self, request: TurnRequest) -> TurnReply:
        self.requests.append(request)
        self._changed.set()
        self._changed = anyio.Event()
        await anyio.lowlevel.checkpoint()
        if self.script:
            item: TurnScript = self.script.pop(0)
        elif self.default is not None:
            item = self.default
        else:
            raise TurnModelError("the scripted model has no reply left")
        if callable(item) and not isinstance(item, Exception | TurnReply):
            item = item(request)
        if isinstance(item, Exception):
            raise item
        return item

    async def wait_requests(self, n: int, *, timeout: float = 10.0) -> TurnRequest:
        """Wait until ``n`` requests were made; return the n-th."""
        with anyio.fail_after(timeout):
            while len(self.requests) < n:
                await self._changed.wait()
        return self.requests[n - 1]


def call(name: str, args: dict[str, Any] | None = None, *, id: str = "") -> TurnReply:
    """A reply that calls one function."""
    return TurnReply(calls=(FunctionCallRequest(id, name, dict(args or {})),))


def say(text: str) -> TurnReply:
    return TurnReply(text=text)
