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
only wires them together, runs their one lifecycle and decides where answers
go; what callers read and ask of a session (its events, stats and states,
device calls, stops, waits) is its base class, ``live/session_api.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from live import dispatch, wire
from live.budget import SpendingCap
from live.calls import Calls, Deliveries
from live.config import SessionConfig
from live.connection import ModelLink
from live.events import ErrorEvent, Event, from_model
from live.fanout import Fanout
from live.input_stream import InputStream
from live.model import (
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
from live.session_api import SessionApi
from live.stats import SessionStats
from live.stop_streaming import STOP_STREAMING, StopStreamingTool
from live.streams import StreamRegistry
from live.tool import Tool, ToolContext, check_unique_names, coalesce_by_tool
from live.util.backoff import milestone
from live.util.clock import Clock, MonotonicClock

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


class LiveSession(SessionApi):
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

    def _stream_context(
        self, tool: Tool, call_id: str, stream: InputStream[Any] | None
    ) -> ToolContext:
        return dispatch.make_context(tool, call_id, self.clock, self._emit, input_stream=stream)

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


__all__ = ["LiveSession", "Runner"]
