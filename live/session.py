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
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from google.genai import types

from live import dispatch
from live.clock import Clock, MonotonicClock
from live.config import PENDING_STATUS, EmitMode, SessionConfig
from live.connection import ModelLink
from live.eventlog import EventLog
from live.events import (
    Emission,
    ErrorEvent,
    Event,
    Interrupted,
    JobUpdate,
    ModelAudio,
    ModelText,
    ToolCall,
    ToolResult,
    Transcript,
    TurnComplete,
    Usage,
)
from live.fanout import Fanout
from live.input_stream import InputStream
from live.model import (
    FunctionCallRequest,
    LiveModel,
    LiveSetup,
    ModelAudioOut,
    ModelEvent,
    ModelInterrupted,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTranscriptOut,
    ModelTurnComplete,
    ModelUsage,
    SendToolResponse,
)
from live.outbox import Outbox, OutEmission, render_emission
from live.requests import LiveRequestQueue
from live.stop_streaming import STOP_STREAMING, StopStreamingTool
from live.streams import DEVICE, MODEL, StreamHandle, StreamRegistry
from live.tool import Tool, check_unique_names, coalesce_updates

log = logging.getLogger("lookout.session")

_SILENT = types.FunctionResponseScheduling.SILENT


class SessionError(Exception):
    """The session could not go on (the model was required and could not be reached)."""


@dataclass
class SessionStats:
    frames_in: int = 0
    frames_to_model: int = 0
    frames_model_lane_dropped: int = 0
    emissions: int = 0
    emissions_coalesced: int = 0
    tool_calls: int = 0
    reconnects: int = 0
    events_dropped: int = 0
    usage_prompt_tokens: int = 0
    usage_response_tokens: int = 0
    usage_total_tokens: int = 0


@dataclass(frozen=True)
class DeviceCall:
    """A call the device made itself, and the answer it got."""

    call_id: str
    name: str
    response: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.response.get("status") != "error"


class Runner:
    """Holds what a session is made of; ``run_live`` starts one."""

    def __init__(
        self,
        model: LiveModel,
        tools: Sequence[Tool] = (),
        config: SessionConfig | None = None,
        *,
        clock: Clock | None = None,
        event_log: EventLog | None = None,
        epoch: float | None = None,
    ) -> None:
        check_unique_names(tools)
        if STOP_STREAMING in (tool.name for tool in tools):
            raise ValueError("stop_streaming is built in; do not list it")
        self.model = model
        self.tools = list(tools)
        self.config = config or SessionConfig()
        self.clock = clock or MonotonicClock()
        self.event_log = event_log
        # Events carry ``t`` in seconds since the epoch (default: when the session starts).
        self.epoch = epoch

    @contextlib.asynccontextmanager
    async def run_live(self, queue: LiveRequestQueue) -> AsyncIterator[LiveSession]:
        session = LiveSession(self, queue)
        async with anyio.create_task_group() as tg:
            # The session's own tasks live in a nested group so that ending the session
            # (queue closed, model given up on) never cancels the caller's code here.
            await tg.start(session._run)
            try:
                yield session
            finally:
                with anyio.CancelScope(shield=True):
                    await session._teardown()
                session._cancel_tasks()


class LiveSession:
    def __init__(self, runner: Runner, queue: LiveRequestQueue) -> None:
        self.runner = runner
        self.config = runner.config
        self.clock = runner.clock
        self.queue = queue
        self._stats = SessionStats()
        self.started_at = runner.epoch if runner.epoch is not None else self.clock.now()
        self._tools: dict[str, Tool] = {tool.name: tool for tool in runner.tools}
        if any(tool.is_streaming for tool in runner.tools):
            stop_tool = StopStreamingTool(self.stop_streaming)
            self._tools[stop_tool.name] = stop_tool
        self._outbox = Outbox(
            lambda emission: render_emission(self.config.emit_mode, emission), self._coalesce
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
        self._streams = StreamRegistry(
            self.config,
            self.clock,
            deliver=self._deliver,
            emit=self._emit,
            context=lambda tool, call_id, stream: dispatch.make_context(
                tool, call_id, self.clock, self._emit, input_stream=stream
            ),
            emissions_so_far=lambda: self._stats.emissions,
        )
        self._fanout = Fanout(
            queue, self.config, self.clock, self._streams, self._outbox, self._link
        )
        self._regular_calls: dict[str, anyio.CancelScope] = {}
        self._closing = False
        self._finished = anyio.Event()
        self._tg: TaskGroup | None = None
        self._emission_seq = itertools.count(1)
        self._device_ids = itertools.count(1)
        self._device_answers: dict[str, dict[str, Any]] = {}
        self._events_send, self._events_recv = anyio.create_memory_object_stream[Event](4096)

    # ----------------------------------------------------------------- public

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events_recv.__aiter__()

    @property
    def events(self) -> MemoryObjectReceiveStream[Event]:
        return self._events_recv

    @property
    def stats(self) -> SessionStats:
        stats = self._stats
        stats.frames_in = self._fanout.frames_in
        stats.frames_to_model = self._fanout.frames_to_model
        stats.frames_model_lane_dropped = (
            self._fanout.frames_model_lane_dropped + self._outbox.stats.frames_dropped
        )
        stats.emissions_coalesced = self._outbox.stats.coalesced
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
    def outbox_depth(self) -> int:
        return len(self._outbox)

    def declarations(self) -> list[types.FunctionDeclaration]:
        declarations = [tool.declaration() for tool in self._tools.values()]
        if self.config.emit_mode is EmitMode.TEXT:
            # Models with synchronous calls only reject NON_BLOCKING declarations.
            declarations = [d.model_copy(update={"behavior": None}) for d in declarations]
        return declarations

    def running_streams(self) -> list[dict[str, Any]]:
        return self._streams.info()

    def streaming_tools(self) -> list[str]:
        """Names of the tools whose calls are streams (what a page may start)."""
        return [t.name for t in self._tools.values() if t.is_streaming]

    def input_streams(self) -> dict[str, InputStream]:
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
        await self._dispatch(FunctionCallRequest(call_id, name, dict(args or {})), by=DEVICE)
        return DeviceCall(call_id, name, self._device_answers.pop(call_id, {}))

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
            if self.config.frames_to_model:
                tg.start_soon(self._fanout.model_lane)
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
            for scope in list(self._regular_calls.values()):
                scope.cancel()
            await self._streams.stop_all("session closed")
            # Give answers already queued a moment to reach a live connection.
            if self._link.connected:
                with anyio.move_on_after(self.config.flush_timeout_s):
                    await self._outbox.wait_drained()
            await self._link.close()
            self._finished.set()
            self._events_send.close()

    # ------------------------------------------------------------- the model

    def _setup(self) -> LiveSetup:
        return LiveSetup(
            tools=tuple(self.declarations()),
            system_instruction=self.config.system_instruction,
            resumption_handle=self._link.resumption_handle,
        )

    def _fresh_model_session(self) -> None:
        """The model came back as a new session: it never issued the running model call ids.

        Answers for those calls would be refused or misread, so those streams end
        (without a final answer) and what waits for them is dropped; the event
        log keeps every emission, and the new session calls the tools it wants.
        Device calls are nobody's business but the device's: they go on.
        """
        handles = [h for h in self._streams.handles.values() if h.by == MODEL]
        ids = {h.call_id for h in handles}
        dropped = self._outbox.drop_calls(ids)
        if handles or dropped:
            log.warning(
                "the model started a fresh session; stopping %d stream(s), dropping %d "
                "queued answer(s) for the old session",
                len(handles),
                dropped,
            )
        if handles:
            self._spawn(self._stop_quietly, handles, "model session restarted")

    async def _stop_quietly(self, handles: list[StreamHandle], reason: str) -> None:
        await self._streams.stop_handles(handles, reason, send_final=False)

    def _on_model_event(self, event: ModelEvent) -> None:
        if isinstance(event, ModelToolCall):
            for call in event.calls:
                self._spawn(self._dispatch, call)
        elif isinstance(event, ModelToolCancellation):
            self._spawn(self._cancel_calls, event.ids)
        elif isinstance(event, ModelTextOut):
            self._emit(ModelText(text=event.text))
        elif isinstance(event, ModelTranscriptOut):
            self._emit(Transcript(text=event.text, direction=event.direction))
        elif isinstance(event, ModelAudioOut):
            self._emit(ModelAudio(mime_type=event.mime_type, size=len(event.data), data=event.data))
        elif isinstance(event, ModelTurnComplete):
            self._emit(TurnComplete())
        elif isinstance(event, ModelInterrupted):
            self._emit(Interrupted())
        elif isinstance(event, ModelUsage):
            stats = self._stats
            stats.usage_prompt_tokens += event.prompt_tokens
            stats.usage_response_tokens += event.response_tokens
            stats.usage_total_tokens += event.total_tokens
            self._emit(
                Usage(
                    prompt_tokens=event.prompt_tokens,
                    response_tokens=event.response_tokens,
                    total_tokens=event.total_tokens,
                )
            )

    def _spawn(self, func: Any, *args: Any) -> None:
        assert self._tg is not None
        self._tg.start_soon(func, *args)

    def _coalesce(self, name: str, older: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
        tool = self._tools.get(name)
        merge = tool.coalesce if tool is not None else coalesce_updates
        try:
            return merge(older, newer)
        except Exception:
            log.exception("coalescing emissions of %s failed; keeping the newer one", name)
            return newer

    # ------------------------------------------------------------- tool calls

    def _respond(
        self, call_id: str, name: str, response: dict[str, Any], by: str, **kw: Any
    ) -> None:
        if by == MODEL:
            function_response = types.FunctionResponse(
                id=call_id, name=name, response=response, **kw
            )
            self._outbox.post(SendToolResponse((function_response,)))
        else:
            self._device_answers[call_id] = response
        self._emit(ToolResult(id=call_id, name=name, response=response))

    def _refuse(self, call_id: str, name: str, message: str, by: str) -> None:
        self._emit(ErrorEvent(message=message, where="tool_call", id=call_id))
        self._respond(call_id, name, dispatch.error_response(message, self.config.secrets), by)

    async def _dispatch(self, call: FunctionCallRequest, by: str = MODEL) -> None:
        self._stats.tool_calls += 1
        args = call.args if isinstance(call.args, dict) else {}
        self._emit(ToolCall(id=call.id, name=call.name, args=args))
        if call.id in self._streams.handles or call.id in self._regular_calls:
            self._refuse(call.id, call.name, f"call id {call.id} is already running", by)
            return
        resolved = dispatch.resolve(self._tools, call.name, args)
        if isinstance(resolved, str):
            self._refuse(call.id, call.name, resolved, by)
            return
        tool, checked = resolved.tool, resolved.args
        if tool.is_streaming:
            self._start_stream(tool, call.id, checked, by)
        elif tool.is_long_running:
            await self._run_job(tool, call.id, checked, by)
        else:
            context = dispatch.make_context(tool, call.id, self.clock, self._emit)
            with anyio.CancelScope() as scope:
                self._regular_calls[call.id] = scope
                try:
                    outcome = await dispatch.invoke(
                        tool, checked, context, secrets=self.config.secrets
                    )
                finally:
                    self._regular_calls.pop(call.id, None)
                if outcome.error is not None:
                    self._emit(ErrorEvent(message=outcome.error, where=outcome.where, id=call.id))
                self._respond(call.id, tool.name, outcome.response, by)

    def _start_stream(self, tool: Tool, call_id: str, args: dict[str, Any], by: str) -> None:
        handle = self._streams.start(tool, call_id, args, by=by, after_seq=self.queue.last_seq)
        if isinstance(handle, str):
            self._refuse(call_id, tool.name, handle, by)
            return
        # Answer at once so the model is never left waiting on a streaming call.
        pending = {"status": PENDING_STATUS}
        if self.config.emit_mode is EmitMode.FUNCTION_RESPONSE:
            self._respond(call_id, tool.name, pending, by, will_continue=True, scheduling=_SILENT)
        else:
            self._respond(call_id, tool.name, pending, by)
        self._spawn(self._streams.run, handle)

    async def _run_job(self, tool: Tool, call_id: str, args: dict[str, Any], by: str) -> None:
        """A long-running call in live mode: a ticket now, the result later, same call id."""
        job = dispatch.new_job(tool, call_id, args)
        context = dispatch.make_context(tool, call_id, self.clock, self._emit)
        context.job_id = job.job_id
        context.progress = dispatch.JobProgressReporter(job, self.clock.now, 0.5, self._emit)
        self._respond(call_id, tool.name, job.ticket(), by, will_continue=True, scheduling=_SILENT)
        self._emit(JobUpdate(id=call_id, job_id=job.job_id, name=tool.name, state="running"))
        scope = anyio.CancelScope()
        self._regular_calls[call_id] = scope
        try:
            await dispatch.run_job(job, tool, context, scope, secrets=self.config.secrets)
        finally:
            self._regular_calls.pop(call_id, None)
            self._emit(
                JobUpdate(
                    id=call_id,
                    job_id=job.job_id,
                    name=tool.name,
                    state=job.state.value,
                    result=job.result,
                    error=job.error,
                )
            )
        if job.state.value == "failed" and job.error:
            self._emit(ErrorEvent(message=job.error, where=tool.name, id=call_id))
        if job.state.value != "cancelled":
            self._respond(call_id, tool.name, job.final_response(), by)

    def _deliver(
        self,
        handle: StreamHandle,
        payload: dict[str, Any],
        final: bool,
        scheduling: types.FunctionResponseScheduling | None,
    ) -> None:
        to_model = handle.by == MODEL
        if to_model:
            self._outbox.post_emission(
                OutEmission(
                    handle.call_id,
                    handle.name,
                    payload,
                    final,
                    scheduling or self.config.scheduling,
                )
            )
        self._stats.emissions += 1
        self._emit(
            Emission(
                id=handle.call_id,
                name=handle.name,
                payload=payload,
                seq=next(self._emission_seq),
                final=final,
                to_model=to_model,
            )
        )

    async def _cancel_calls(self, ids: Sequence[str]) -> None:
        for call_id in ids:
            scope = self._regular_calls.get(call_id)
            if scope is not None:
                scope.cancel()
        handles = [self._streams.handles[i] for i in ids if i in self._streams.handles]
        if handles:
            await self._streams.stop_handles(handles, "cancelled by model", send_final=False)

    # ----------------------------------------------------------------- events

    def _emit(self, event: Event) -> None:
        if event.t == 0.0:
            event = dataclasses.replace(event, t=self.clock.now() - self.started_at)
        if self.runner.event_log is not None:
            try:
                self.runner.event_log.record(event)
            except Exception:
                log.exception("event log failed")
        try:
            self._events_send.send_nowait(event)
        except anyio.WouldBlock:
            # A consumer that stopped reading must not stall the session; the log still has it.
            self._stats.events_dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


__all__ = ["DeviceCall", "LiveSession", "Runner", "SessionError", "SessionStats"]
