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
only wires them together (``SessionCore``), runs their one lifecycle and decides where
answers go; what callers hold, read and ask of a session (its events, stats and states,
device calls, stops, waits) is ``LiveSession`` (``live/session_api.py``), over its core.
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
from live.calls import Calls, Deliveries
from live.config import EmitMode, SessionConfig
from live.events import ErrorEvent, Event, from_model
from live.fanout import Fanout
from live.input_stream import InputStream
from live.link.budget import SpendingCap
from live.link.connection import ModelLink
from live.link.outbox import Outbox, OutItem, describe, render_emission
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
from live.requests import LiveRequestQueue
from live.session_api import LiveSession
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
        return LiveSession(SessionCore(self, queue))

    def run_live(
        self, queue: LiveRequestQueue[Any]
    ) -> contextlib.AbstractAsyncContextManager[LiveSession]:
        """Start a session over ``queue``; it ends when the block is left."""
        return self.session(queue).run()


class SessionCore:
    """The parts of one session and their one lifecycle: built whole by ``Runner.session``,
    started by ``run``; what callers hold is the ``LiveSession`` over it.

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
        self.stats = SessionStats()
        self.started_at = runner.epoch if runner.epoch is not None else self.clock.now()
        self._closing = False
        self.finished = anyio.Event()
        self.tg: TaskGroup | None = None  # the running session's task group
        self.device_ids = itertools.count(1)
        self.events_dropped = 0
        self.events_send, self.events_recv = anyio.create_memory_object_stream[Event](4096)
        self.tools: dict[str, Tool] = {tool.name: tool for tool in runner.tools}
        if any(tool.is_streaming for tool in runner.tools):
            stop_tool = StopStreamingTool(self.stop_streaming)
            self.tools[stop_tool.name] = stop_tool
        self.outbox = Outbox(
            lambda emission: render_emission(self.config.emit_mode, emission),
            coalesce_by_tool(self.tools),
            max_items=self.config.outbox_max,
            on_drop=self._outbox_dropped,
        )
        self.budget = SpendingCap(
            self.config.budget,
            self.clock,
            emit=self.emit,
            note=self._note,
            release=self.outbox.post_emission,
            coalesce=coalesce_by_tool(self.tools),
        )
        self.deliveries = Deliveries(
            self.config,
            self.outbox,
            emit=self.emit,
            hold=self.budget.hold if self.budget.enabled else None,
        )
        self.streams = StreamRegistry(
            self.config,
            self.clock,
            deliver=self.deliveries.deliver,
            emit=self.emit,
            context=self._stream_context,
            emissions_so_far=self.deliveries.emissions,
        )
        self.calls = Calls(
            self.tools,
            self.config,
            self.clock,
            self.outbox,
            self.streams,
            self.deliveries,
            emit=self.emit,
            spawn=self._spawn,
            last_seq=lambda: queue.last_seq,
            model_connected=lambda: self.link.connected,
        )
        self.link = ModelLink(
            runner.model,
            self.config,
            self.clock,
            self.outbox,
            setup=self._setup,
            on_event=self._on_model_event,
            emit=self.emit,
            on_fresh_session=self._fresh_model_session,
        )
        self.fanout = Fanout(
            queue,
            self.config,
            self.clock,
            self.streams,
            self.outbox,
            self.link,
            frames_allowed=self.budget.frames_allowed,
        )

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Run the session for the block; leaving it stops every stream (once only)."""
        if self.tg is not None:
            raise RuntimeError("this session has run already")
        async with anyio.create_task_group() as tg:
            # The session's own tasks live in a nested group so that ending the session
            # (queue closed, model given up on) never cancels the caller's code here.
            await tg.start(self._run)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._teardown()
                self._cancel_tasks()

    def declarations(self) -> list[wire.FunctionDeclaration]:
        declarations = [tool.declaration() for tool in self.tools.values()]
        if self.config.emit_mode is EmitMode.TEXT:
            # Models with synchronous calls only reject NON_BLOCKING declarations.
            declarations = [dataclasses.replace(d, behavior=None) for d in declarations]
        return declarations

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]:
        """Stop streams by name and/or call id (the model's stop_streaming takes this path)."""
        return await self.streams.stop_matching(function_name, call_id, reason="stop_streaming")

    def _stream_context(
        self, tool: Tool, call_id: str, stream: InputStream[Any] | None
    ) -> ToolContext:
        return dispatch.make_context(tool, call_id, self.clock, self.emit, input_stream=stream)

    # -------------------------------------------------------------- lifecycle

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self.tg = tg
            tg.start_soon(self._keep_connected)
            tg.start_soon(self.link.send_forever)
            tg.start_soon(self._pump_then_end)
            if self.config.sends_frames:
                tg.start_soon(self.fanout.model_lane)
            if self.budget.enabled:
                tg.start_soon(self.budget.run)
            task_status.started()

    def _cancel_tasks(self) -> None:
        if self.tg is not None:
            self.tg.cancel_scope.cancel()

    async def _keep_connected(self) -> None:
        await self.link.run()
        if self.link.failure is not None and not self._closing:
            # Only a required model ends the session; it ends the way closing the queue does.
            self.queue.close()

    async def _pump_then_end(self) -> None:
        await self.fanout.pump()
        # The queue was closed: end the session the same way leaving the block does.
        await self._teardown()
        self._cancel_tasks()

    async def _teardown(self) -> None:
        if self._closing:
            await self.finished.wait()
            return
        self._closing = True
        self.streams.closing = True
        self.fanout.wake()
        self.streams.notify()
        self.outbox.poke()
        with anyio.CancelScope(shield=True):
            self.calls.cancel_plain()
            await self.streams.stop_all("session closed")
            # Give answers already queued a moment to reach a live connection.
            if self.link.connected:
                with self.clock.move_on_after(self.config.flush_timeout_s):
                    await self.outbox.wait_drained()
            await self.link.close()
            self.finished.set()
            self.events_send.close()

    # ------------------------------------------------------------- the model

    def _setup(self) -> LiveSetup:
        # A new connection starts a new turn: a turn cut by a drop is counted as it was.
        self.budget.end_turn()
        self.stats.end_turn()
        return LiveSetup(
            tools=tuple(self.declarations()),
            system_instruction=self.config.system_instruction,
            resumption_handle=self.link.resumption_handle,
        )

    def _on_model_event(self, event: ModelEvent) -> None:
        if isinstance(event, ModelToolCall):
            for call in event.calls:
                self._spawn(self.calls.dispatch, call)
        elif isinstance(event, ModelToolCancellation):
            self._spawn(self.calls.cancel, event.ids)
        else:
            if isinstance(event, ModelUsage):
                self.stats.add_usage(event)
                self.budget.on_usage(event.total_tokens)
            elif isinstance(event, ModelTurnComplete | ModelInterrupted):
                self.budget.end_turn()
                self.stats.end_turn()
            said = from_model(event)
            if said is not None:
                self.emit(said)

    def _fresh_model_session(self) -> None:
        self.budget.forget()
        self.calls.forget_model_calls()

    def _note(self, text: str) -> None:
        """A short note from the device to the model (as user text that completes no turn;
        the adapter sends it as realtime text where its family needs that)."""
        content = wire.Content(role="user", parts=[wire.Part(text=text)])
        self.outbox.post(SendContent(content, turn_complete=False))

    def _spawn(self, func: Any, *args: Any) -> None:
        assert self.tg is not None
        self.tg.start_soon(func, *args)

    # ----------------------------------------------------------------- events

    def _outbox_dropped(self, item: OutItem) -> None:
        """A message for the model went past the outbox's bound: counted, and said at the
        1st, 10th, 100th... (a long outage must not flood the log)."""
        dropped = self.outbox.stats.dropped
        if not milestone(dropped):
            return
        message = (
            f"outbox full ({self.config.outbox_max} messages waiting for the model): "
            f"dropped the oldest, {describe(item)}; {dropped} dropped so far"
        )
        log.warning("%s", message)
        self.emit(ErrorEvent(message=message, where="outbox"))

    def emit(self, event: Event) -> None:
        """Stamp an event and hand it to the session's destination and its event stream."""
        if event.t == 0.0:
            event = dataclasses.replace(event, t=self.clock.now() - self.started_at)
        if self.runner.on_event is not None:
            try:
                self.runner.on_event(event)
            except Exception:
                log.exception("the session's event destination failed")
        try:
            self.events_send.send_nowait(event)
        except anyio.WouldBlock:
            # A consumer that stopped reading must not stall the session; the log still has it.
            self.events_dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


__all__ = ["LiveSession", "Runner", "SessionCore"]
