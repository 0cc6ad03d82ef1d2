"""What a live session offers whoever holds it: its events, stats and states, device calls,
stops and waits.

``LiveSession`` (``live/session.py``) builds the parts these read, in the order they need
each other, and runs their lifecycle; this is its face, a base class so that every caller
reads ``session.stats``, ``session.call_tool(...)`` and the rest on the session itself. It
only reads the parts and asks them: it builds nothing and starts nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from live import wire
from live.budget import SpendingCap
from live.calls import Calls, Deliveries, DeviceCall
from live.config import EmitMode, SessionConfig
from live.connection import ModelLink
from live.events import Event
from live.fanout import Fanout
from live.input_stream import InputStream
from live.model import FunctionCallRequest
from live.outbox import Outbox
from live.stats import SessionStats
from live.streams import DEVICE, StreamRegistry
from live.tool import Tool


class SessionApi:
    """The public face of a live session, over the parts ``LiveSession`` builds."""

    # Built by ``LiveSession.__init__``.
    config: SessionConfig
    _stats: SessionStats
    _events_recv: MemoryObjectReceiveStream[Event]
    _events_dropped: int
    _finished: anyio.Event
    _tg: TaskGroup | None
    _device_ids: itertools.count[int]
    _tools: dict[str, Tool]
    _outbox: Outbox
    _budget: SpendingCap
    _deliveries: Deliveries
    _streams: StreamRegistry
    _calls: Calls
    _link: ModelLink
    _fanout: Fanout
    # Stamps an event and hands it to the session's destination and its event stream.
    _emit: Callable[[Event], None]

    @property
    def started(self) -> bool:
        """Whether the session has started running (it may have ended since)."""
        return self._tg is not None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events_recv.__aiter__()

    @property
    def events(self) -> MemoryObjectReceiveStream[Event]:
        return self._events_recv

    @property
    def stats(self) -> SessionStats:
        stats = self._stats
        stats.tool_calls = self._calls.stats.tool_calls
        stats.emissions = self._deliveries.stats.emissions
        stats.events_dropped = self._events_dropped
        stats.frames_in = self._fanout.frames_in
        stats.frames_to_model = self._fanout.frames_to_model
        stats.audio_in = self._fanout.audio_in
        stats.audio_to_model = self._fanout.audio_to_model
        stats.audio_lost = self._fanout.audio_lost
        stats.frames_model_lane_dropped = (
            self._fanout.frames_model_lane_dropped + self._outbox.stats.frames_dropped
        )
        stats.frames_budget_held = self._fanout.frames_budget_held
        stats.emissions_coalesced = self._outbox.stats.coalesced
        stats.outbox_dropped = self._outbox.stats.dropped
        stats.reconnects = self._link.reconnects
        return stats

    @property
    def connection_state(self) -> str:
        return self._link.state

    @property
    def connection_since(self) -> float:
        """When the connection state last changed (session clock)."""
        return self._link.since

    @property
    def model_connected(self) -> bool:
        return self._link.connected

    @property
    def model_name(self) -> str:
        return self._link.model.name

    @property
    def resumption_handle(self) -> str | None:
        return self._link.resumption_handle

    @property
    def failure(self) -> str | None:
        return self._link.failure

    @property
    def budget(self) -> SpendingCap:
        """The spending cap (``enabled`` False: no limit set, it only counts)."""
        return self._budget

    @property
    def outbox_depth(self) -> int:
        return len(self._outbox)

    def declarations(self) -> list[wire.FunctionDeclaration]:
        declarations = [tool.declaration() for tool in self._tools.values()]
        if self.config.emit_mode is EmitMode.TEXT:
            # Models with synchronous calls only reject NON_BLOCKING declarations.
            declarations = [dataclasses.replace(d, behavior=None) for d in declarations]
        return declarations

    def running_streams(self) -> list[dict[str, Any]]:
        return self._streams.info()

    def streaming_tools(self) -> list[str]:
        """Names of the tools whose calls are streams (what a page may start)."""
        return [t.name for t in self._tools.values() if t.is_streaming]

    def input_streams(self) -> dict[str, InputStream[Any]]:
        return self._streams.input_streams()

    def publish(self, event: Event) -> None:
        """Report an event of the caller's own through the session (stamped, logged, streamed)."""
        self._emit(event)

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]:
        """Stop streams by name and/or call id (the model's stop_streaming takes this path)."""
        return await self._streams.stop_matching(function_name, call_id, reason="stop_streaming")

    async def call_tool(self, name: str, args: Mapping[str, Any] | None = None) -> DeviceCall:
        """A device call (page, console): the same runtime path, but nothing goes to the model.

        Its answer and emissions are recorded as events (``tool_result``,
        ``emission`` with ``to_model`` false). A plain tool has answered by the
        time this returns; a streaming one has started (its answer is the
        pending status).
        """
        call_id = f"device-{next(self._device_ids)}"
        await self._calls.dispatch(FunctionCallRequest(call_id, name, dict(args or {})), by=DEVICE)
        return DeviceCall(call_id, name, self._calls.take_device_answer(call_id))

    async def wait_finished(self) -> None:
        await self._finished.wait()

    async def wait_model_connected(self) -> None:
        """Wait until a model connection is up (the session works without one meanwhile)."""
        await self._link.wait_connected()

    async def wait_input_consumer(self) -> None:
        await self._fanout.wait_input_consumer()

    async def wait_inputs_idle(self) -> None:
        """Every input-consuming call has processed what was queued so far."""
        await self._fanout.wait_inputs_idle()

    async def wait_delivered(self) -> None:
        """A connected model has taken every message queued for it (a model away: at once)."""
        await self._fanout.wait_delivered()


__all__ = ["SessionApi"]
