"""What a live session offers whoever holds it: its events, stats and states, device calls,
stops and waits.

``LiveSession`` is the session callers hold (``Runner.session``, ``Runner.run_live``). It has
the session's parts, ``SessionCore`` (``live/session.py``: built in the order they need each
other, run in one lifecycle), and only reads them and asks them: it builds nothing and
starts nothing but through the core's ``run``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from anyio.streams.memory import MemoryObjectReceiveStream

from live import wire
from live.calls import DeviceCall
from live.config import SessionConfig
from live.events import Event
from live.input_stream import InputStream
from live.link.budget import SpendingCap
from live.model import FunctionCallRequest
from live.stats import SessionStats
from live.streams import DEVICE

if TYPE_CHECKING:
    from live.session import SessionCore


class LiveSession:
    """One live session, as its holder sees it, over its parts (``SessionCore``)."""

    def __init__(self, core: SessionCore) -> None:
        self._core = core

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[LiveSession]:
        """Run the session for the block; leaving it stops every stream (once only)."""
        async with self._core.run():
            yield self

    @property
    def config(self) -> SessionConfig:
        return self._core.config

    @property
    def started_at(self) -> float:
        """When the session started, on its clock (its events' ``t`` count from here)."""
        return self._core.started_at

    @property
    def started(self) -> bool:
        """Whether the session has started running (it may have ended since)."""
        return self._core.tg is not None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._core.events_recv.__aiter__()

    @property
    def events(self) -> MemoryObjectReceiveStream[Event]:
        return self._core.events_recv

    @property
    def stats(self) -> SessionStats:
        stats = self._core.stats
        stats.tool_calls = self._core.calls.stats.tool_calls
        stats.emissions = self._core.deliveries.stats.emissions
        stats.events_dropped = self._core.events_dropped
        stats.frames_in = self._core.fanout.frames_in
        stats.frames_to_model = self._core.fanout.frames_to_model
        stats.audio_in = self._core.fanout.audio_in
        stats.audio_to_model = self._core.fanout.audio_to_model
        stats.audio_lost = self._core.fanout.audio_lost
        stats.frames_model_lane_dropped = (
            self._core.fanout.frames_model_lane_dropped + self._core.outbox.stats.frames_dropped
        )
        stats.frames_budget_held = self._core.fanout.frames_budget_held
        stats.emissions_coalesced = self._core.outbox.stats.coalesced
        stats.outbox_dropped = self._core.outbox.stats.dropped
        stats.reconnects = self._core.link.reconnects
        return stats

    @property
    def connection_state(self) -> str:
        return self._core.link.state

    @property
    def connection_since(self) -> float:
        """When the connection state last changed (session clock)."""
        return self._core.link.since

    @property
    def model_connected(self) -> bool:
        return self._core.link.connected

    @property
    def model_name(self) -> str:
        return self._core.link.model.name

    @property
    def resumption_handle(self) -> str | None:
        return self._core.link.resumption_handle

    @property
    def failure(self) -> str | None:
        return self._core.link.failure

    @property
    def budget(self) -> SpendingCap:
        """The spending cap (``enabled`` False: no limit set, it only counts)."""
        return self._core.budget

    @property
    def outbox_depth(self) -> int:
        return len(self._core.outbox)

    def declarations(self) -> list[wire.FunctionDeclaration]:
        return self._core.declarations()

    def running_streams(self) -> list[dict[str, Any]]:
        return self._core.streams.info()

    def streaming_tools(self) -> list[str]:
        """Names of the tools whose calls are streams (what a page may start)."""
        return [t.name for t in self._core.tools.values() if t.is_streaming]

    def input_streams(self) -> dict[str, InputStream[Any]]:
        return self._core.streams.input_streams()

    def publish(self, event: Event) -> None:
        """Report an event of the caller's own through the session (stamped, logged, streamed)."""
        self._core.emit(event)

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]:
        """Stop streams by name and/or call id (the model's stop_streaming takes this path)."""
        return await self._core.stop_streaming(function_name, call_id)

    async def call_tool(self, name: str, args: Mapping[str, Any] | None = None) -> DeviceCall:
        """A device call (page, console): the same runtime path, but nothing goes to the model.

        Its answer and emissions are recorded as events (``tool_result``,
        ``emission`` with ``to_model`` false). A plain tool has answered by the
        time this returns; a streaming one has started (its answer is the
        pending status).
        """
        call_id = f"device-{next(self._core.device_ids)}"
        await self._core.calls.dispatch(
            FunctionCallRequest(call_id, name, dict(args or {})), by=DEVICE
        )
        return DeviceCall(call_id, name, self._core.calls.take_device_answer(call_id))

    async def wait_finished(self) -> None:
        await self._core.finished.wait()

    async def wait_model_connected(self) -> None:
        """Wait until a model connection is up (the session works without one meanwhile)."""
        await self._core.link.wait_connected()

    async def wait_input_consumer(self) -> None:
        await self._core.fanout.wait_input_consumer()

    async def wait_inputs_idle(self) -> None:
        """Every input-consuming call has processed what was queued so far."""
        await self._core.fanout.wait_inputs_idle()

    async def wait_delivered(self) -> None:
        """A connected model has taken every message queued for it (a model away: at once)."""
        await self._core.fanout.wait_delivered()


__all__ = ["LiveSession"]
