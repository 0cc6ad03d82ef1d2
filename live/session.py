"""The live session: tools, streams and a model that may come and go.

``Runner.run_live(queue)`` is an async context manager. It does not wait for
the model: the session works at once (device calls, streams, the event log)
and its ``ModelLink`` connects and reconnects beside it. Everything (queue
pump, model lane, link, sender, tool calls, streams) runs in one anyio task
group, so nothing outlives the ``async with`` block::

    async with runner.run_live(queue) as session:
        async for event in session:
            ...

The work is split by job: ``fanout`` (input to tools and the model lane),
``streams`` (running streaming calls, bounds, stops), ``dispatch`` (calls and
jobs, shared with request-response turns), ``connection`` (the model link),
``outbox`` (what waits for the model, merged while it is away). This module
only wires them together and decides where answers go.

Kept whole: one class, the session's face (stats, states, device calls, stops)
over the parts it builds in dependency order, and their one lifecycle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from live import dispatch, wire
from live.backoff import milestone
from live.budget import SpendingCap
from live.calls import Calls, Deliveries, DeviceCall
from live.clock import Clock, MonotonicClock
from live.config import EmitMode, SessionConfig
from live.connection import ModelLink
from live.events import ErrorEvent, Event, from_model
from live.fanout import Fanout
from live.input_stream import InputStream
from live.model import (
    FunctionCallRequest,
    LiveModel,
    LiveSetup,
    ModelEvent,
    ModelInterrupted,
    ModelToolCall,
    ModelToolCancellation,
    ModelTurnComplete,
    ModelUsage,
    SendContent,
)
from live.outbox import Outbox, OutItem, describe, render_emission
from live.requests import LiveRequestQueue
from live.stats import SessionStats
from live.stop_streaming import STOP_STREAMING, StopStreamingTool
from live.streams import DEVICE, StreamRegistry
from live.tool import Tool, ToolContext, check_unique_names, coalesce_by_tool

log = logging.getLogger("lookout.session")


class Runner:
    """Holds what a session is made of; ``run_live`` starts one."""

    def __init__(
        self,
        model: LiveModel,
        tools: Sequence[Tool] = (),
        config: SessionConfig | None = None,
        *,
        clock: Clock | None = None,
        on_event: Callable[[Event], None] | None = None,
        epoch: float | None = None,
    ) -> None:
        check_unique_names(tools)
        if STOP_STREAMING in (tool.name for tool in tools):
            raise ValueError("stop_streaming is built in; do not list it")
        self.model = model
        self.tools = list(tools)
        self.config = config or SessionConfig()
        self.clock = clock or MonotonicClock()
        # Where each of the session's events goes as it happens (an event log's ``record``,
        # the device's bus's ``publish``), besides the session's own event stream.
        self.on_event = on_event
        # Events carry ``t`` in seconds since the epoch (default: when the session starts).
        self.epoch = epoch

    def session(self, queue: LiveRequestQueue[Any]) -> LiveSession:
        """A session over ``queue``, built but not running (``run`` starts it)."""
        return LiveSession(self, queue)

    def run_live(
        self, queue: LiveRequestQueue[Any]
    ) -> contextlib.AbstractAsyncContextManager[LiveSession]:
        """Start a session over ``queue``; it ends when the block is left."""
        return self.session(queue).run()


class LiveSession:
    """One session: built whole by ``Runner.session``, started by ``run``.

    Its parts are made in the order they need each other: the outbox, the
    streams (which hand emissions to the call book-keeping's ``deliver``), the
    calls, the model link (a fresh model session forgets the calls) and the
    fan-out; no part reaches another before it exists.
    """

    def __init__(self, runner: Runner, queue: LiveRequestQueue[Any]) -> None:
        self.runner = runner
        self.config = runner.config
        self.clock = runner.clock
        self.queue = queue
        self._stats = SessionStats()
        self.started_at = runner.epoch if runner.epoch is not None else self.clock.now()
        self._closing = False
        self._finished = anyio.Event()
        self._tg: TaskGroup | None = None  # the running session's task group
        self._device_ids = itertools.count(1)
        self._events_dropped = 0
        self._events_send, self._events_recv = anyio.create_memory_object_stream[Event](4096)
        self._tools: dict[str, Tool] = {tool.name: tool for tool in runner.tools}
        if any(tool.is_streaming for tool in runner.tools):
            stop_tool = StopStreamingTool(self.stop_streaming)
            self._tools[stop_tool.name] = stop_tool
        self._outbox = Outbox(
            lambda emission: render_emission(self.config.emit_mode, emission),
            coalesce_by_tool(self._tools),
            max_items=self.config.outbox_max,
            on_drop=self._outbox_dropped,
        )
        self._budget = SpendingCap(
            self.config.budget,
            self.clock,
            emit=self._emit,
            note=self._note,
            release=self._outbox.post_emission,
            coalesce=coalesce_by_tool(self._tools),
        )
        self._deliveries = Deliveries(
            self.config,
            self._outbox,
            emit=self._emit,
            hold=self._budget.hold if self._budget.enabled else None,
        )
        self._streams = StreamRegistry(
            self.config,
            self.clock,
            deliver=self._deliveries.deliver,
            emit=self._emit,
            context=self._stream_context,
            emissions_so_far=self._deliveries.emissions,
        )
        self._calls = Calls(
            self._tools,
            self.config,
            self.clock,
            self._outbox,
            self._streams,
            self._deliveries,
            emit=self._emit,
            spawn=self._spawn,
            last_seq=lambda: queue.last_seq,
            model_connected=lambda: self._link.connected,
        )
        self._link = ModelLink(
            runner.model,
            self.config,
            self.clock,
            self._outbox,
            setup=self._setup,
            on_event=self._on_model_event,
            emit=self._emit,
            on_fresh_session=self._fresh_model_session,
        )
        self._fanout = Fanout(
            queue,
            self.config,
            self.clock,
            self._streams,
            self._outbox,
            self._link,
            frames_allowed=self._budget.frames_allowed,
        )

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[LiveSession]:
        """Run the session for the block; leaving it stops every stream (once only)."""
        if self._tg is not None:
            raise RuntimeError("this session has run already")
        async with anyio.create_task_group() as tg:
            # The session's own tasks live in a nested group so that ending the session
            # (queue closed, model given up on) never cancels the caller's code here.
            await tg.start(self._run)
            try:
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self._teardown()
                self._cancel_tasks()

    @property
    def started(self) -> bool:
        """Whether the session has started running (it may have ended since)."""
        return self._tg is not None

    def _stream_context(
        self, tool: Tool, call_id: str, stream: InputStream[Any] | None
    ) -> ToolContext:
        return dispatch.make_context(tool, call_id, self.clock, self._emit, input_stream=stream)

    # ----------------------------------------------------------------- public

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
        return self.runner.model.name

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

    # -------------------------------------------------------------- lifecycle

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._keep_connected)
            tg.start_soon(self._link.send_forever)
            tg.start_soon(self._pump_then_end)
            if self.config.sends_frames:
                tg.start_soon(self._fanout.model_lane)
            if self._budget.enabled:
                tg.start_soon(self._budget.run)
            task_status.started()

    def _cancel_tasks(self) -> None:
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _keep_connected(self) -> None:
        await self._link.run()
        if self._link.failure is not None and not self._closing:
            # Only a required model ends the session; it ends the way closing the queue does.
            self.queue.close()

    async def _pump_then_end(self) -> None:
        await self._fanout.pump()
        # The queue was closed: end the session the same way leaving the block does.
        await self._teardown()
        self._cancel_tasks()

    async def _teardown(self) -> None:
        if self._closing:
            await self._finished.wait()
            return
        self._closing = True
        self._streams.closing = True
        self._fanout.wake()
        self._streams.notify()
        self._outbox.poke()
        with anyio.CancelScope(shield=True):
            self._calls.cancel_plain()
            await self._streams.stop_all("session closed")
            # Give answers already queued a moment to reach a live connection.
            if self._link.connected:
                with self.clock.move_on_after(self.config.flush_timeout_s):
                    await self._outbox.wait_drained()
            await self._link.close()
            self._finished.set()
            self._events_send.close()

    # ------------------------------------------------------------- the model

    def _setup(self) -> LiveSetup:
        # A new connection starts a new turn: a turn cut by a drop is counted as it was.
        self._budget.end_turn()
        self._stats.end_turn()
        return LiveSetup(
            tools=tuple(self.declarations()),
            system_instruction=self.config.system_instruction,
            resumption_handle=self._link.resumption_handle,
        )

    def _on_model_event(self, event: ModelEvent) -> None:
        if isinstance(event, ModelToolCall):
            for call in event.calls:
                self._spawn(self._calls.dispatch, call)
        elif isinstance(event, ModelToolCancellation):
            self._spawn(self._calls.cancel, event.ids)
        else:
            if isinstance(event, ModelUsage):
                self._stats.add_usage(event)
                self._budget.on_usage(event.total_tokens)
            elif isinstance(event, ModelTurnComplete | ModelInterrupted):
                self._budget.end_turn()
                self._stats.end_turn()
            said = from_model(event)
            if said is not None:
                self._emit(said)

    def _fresh_model_session(self) -> None:
        self._budget.forget()
        self._calls.forget_model_calls()

    def _note(self, text: str) -> None:
        """A short note from the device to the model (as user text that completes no turn;
        the adapter sends it as realtime text where its family needs that)."""
        content = wire.Content(role="user", parts=[wire.Part(text=text)])
        self._outbox.post(SendContent(content, turn_complete=False))

    def _spawn(self, func: Any, *args: Any) -> None:
        assert self._tg is not None
        self._tg.start_soon(func, *args)

    # ----------------------------------------------------------------- events

    def _outbox_dropped(self, item: OutItem) -> None:
        """A message for the model went past the outbox's bound: counted, and said at the
        1st, 10th, 100th... (a long outage must not flood the log)."""
        dropped = self._outbox.stats.dropped
        if not milestone(dropped):
            return
        message = (
            f"outbox full ({self.config.outbox_max} messages waiting for the model): "
            f"dropped the oldest, {describe(item)}; {dropped} dropped so far"
        )
        log.warning("%s", message)
        self._emit(ErrorEvent(message=message, where="outbox"))

    def _emit(self, event: Event) -> None:
        if event.t == 0.0:
            event = dataclasses.replace(event, t=self.clock.now() - self.started_at)
        if self.runner.on_event is not None:
            try:
                self.runner.on_event(event)
            except Exception:
                log.exception("the session's event destination failed")
        try:
            self._events_send.send_nowait(event)
        except anyio.WouldBlock:
            # A consumer that stopped reading must not stall the session; the log still has it.
            self._events_dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


__all__ = ["DeviceCall", "LiveSession", "Runner"]
