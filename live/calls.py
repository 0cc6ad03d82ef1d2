"""Tool calls of a live session, and where their answers go.

A call comes from the model (its answers, emissions and job results go to the
model through the outbox, by call id) or from the device (a page, the console:
the same runtime path, everything recorded as events, nothing sent). Plain
tools answer once; streaming tools are answered at once with a pending status
and run in the session's task group; long-running tools answer with a ticket
and their result follows with the same call id.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from live import dispatch
from live.config import PENDING_STATUS, EmitMode, SessionConfig
from live.events import Emission, ErrorEvent, Event, JobUpdate, ToolCall, ToolResult
from live.jobs.records import JobState
from live.link.outbox import Outbox, OutEmission
from live.model import FunctionCallRequest, SendRealtime, SendToolResponse
from live.streams import MODEL, StreamHandle, StreamRegistry
from live.tool import Tool
from live.util.clock import Clock
from live.wire import Blob, FunctionResponse, Scheduling

log = logging.getLogger("lookout.session")

_SILENT = Scheduling.SILENT


@dataclass(frozen=True)
class DeviceCall:
    """A call the device made itself, and the answer it got."""

    call_id: str
    name: str
    response: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.response.get("status") != "error"


@dataclass
class CallStats:
    tool_calls: int = 0


@dataclass
class EmissionStats:
    emissions: int = 0


class Deliveries:
    """Where each emission of a stream goes: to the model if the model called it; always
    to the events. Made before the streams, which hand it every emission."""

    def __init__(
        self,
        config: SessionConfig,
        outbox: Outbox,
        *,
        emit: Callable[[Event], None],
        hold: Callable[[OutEmission], bool] | None = None,
    ) -> None:
        self.config = config
        self.outbox = outbox
        # The spending cap may take an emission to release later (``live/link/budget.py``).
        self._hold = hold
        self.stats = EmissionStats()
        self._emit = emit
        self._emission_seq = itertools.count(1)
        # Model calls of a session the model no longer has, until their streams have ended:
        # what they still emit meanwhile is logged, never sent to the new session.
        self.forgotten: set[str] = set()

    def emissions(self) -> int:
        """Emissions delivered so far in this session (the per-session budget reads it)."""
        return self.stats.emissions

    def deliver(
        self,
        handle: StreamHandle,
        payload: dict[str, Any],
        final: bool,
        scheduling: Scheduling | None,
    ) -> None:
        """One emission of a stream: to the model if the model called it; always to the log."""
        to_model = handle.by == MODEL and handle.call_id not in self.forgotten
        if to_model:
            emission = OutEmission(
                handle.call_id, handle.name, payload, final, scheduling or self.config.scheduling
            )
            if self._hold is None or not self._hold(emission):
                self.outbox.post_emission(emission)
        self.stats.emissions += 1
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


class Calls:
    def __init__(
        self,
        tools: Mapping[str, Tool],
        config: SessionConfig,
        clock: Clock,
        outbox: Outbox,
        streams: StreamRegistry,
        deliveries: Deliveries,
        *,
        emit: Callable[[Event], None],
        spawn: Callable[..., None],
        last_seq: Callable[[], int],
        model_connected: Callable[[], bool] = lambda: True,
    ) -> None:
        self.tools = tools
        self.config = config
        self.clock = clock
        self.outbox = outbox
        self.streams = streams
        self.deliveries = deliveries
        self.stats = CallStats()
        self._emit = emit
        self._spawn = spawn
        self._last_seq = last_seq
        self._model_connected = model_connected
        self._regular: dict[str, anyio.CancelScope] = {}
        self._device_answers: dict[str, dict[str, Any]] = {}

    # ----------------------------------------------------------------- calls

    async def dispatch(self, call: FunctionCallRequest, by: str = MODEL) -> None:
        self.stats.tool_calls += 1
        args = call.args if isinstance(call.args, dict) else {}
        self._emit(ToolCall(id=call.id, name=call.name, args=args))
        if call.id in self.streams.handles or call.id in self._regular:
            self._refuse(call.id, call.name, f"call id {call.id} is already running", by)
            return
        resolved = dispatch.resolve(self.tools, call.name, args)
        if isinstance(resolved, str):
            self._refuse(call.id, call.name, resolved, by)
            return
        tool, checked = resolved.tool, resolved.args
        if tool.is_streaming:
            self._start_stream(tool, call.id, checked, by)
        elif tool.is_long_running:
            await self._run_job(tool, call.id, checked, by)
        else:
            await self._run_plain(tool, call.id, checked, by)

    def take_device_answer(self, call_id: str) -> dict[str, Any]:
        return self._device_answers.pop(call_id, {})

    def _respond(
        self, call_id: str, name: str, response: dict[str, Any], by: str, **kw: Any
    ) -> None:
        if by == MODEL:
            answer = FunctionResponse(id=call_id, name=name, response=response, **kw)
            self.outbox.post(SendToolResponse((answer,)))
        else:
            self._device_answers[call_id] = response
        self._emit(ToolResult(id=call_id, name=name, response=response))

    def _refuse(self, call_id: str, name: str, message: str, by: str) -> None:
        self._emit(ErrorEvent(message=message, where="tool_call", id=call_id))
        self._respond(call_id, name, dispatch.error_response(message, self.config.secrets), by)

    def _shower(self, call_id: str, by: str) -> Callable[[Blob], bool]:
        """``ToolContext.show`` of a call: the image goes to the outbox ahead of the call's
        answer (posted later), for the model's calls only, never in privacy mode."""

        def show(blob: Blob) -> bool:
            if by != MODEL or self.config.privacy or not self._model_connected():
                return False
            self.outbox.post(SendRealtime(blob, call_id=call_id))
            return True

        return show

    async def _run_plain(self, tool: Tool, call_id: str, args: dict[str, Any], by: str) -> None:
        context = dispatch.make_context(
            tool, call_id, self.clock, self._emit, show=self._shower(call_id, by)
        )
        with anyio.CancelScope() as scope:
            self._regular[call_id] = scope
            try:
                outcome = await dispatch.invoke(tool, args, context, secrets=self.config.secrets)
            finally:
                self._regular.pop(call_id, None)
            if outcome.error is not None:
                self._emit(ErrorEvent(message=outcome.error, where=outcome.where, id=call_id))
            self._respond(call_id, tool.name, outcome.response, by)

    def _start_stream(self, tool: Tool, call_id: str, args: dict[str, Any], by: str) -> None:
        handle = self.streams.start(tool, call_id, args, by=by, after_seq=self._last_seq())
        if isinstance(handle, str):
            self._refuse(call_id, tool.name, handle, by)
            return
        # Answer at once so the model is never left waiting on a streaming call.
        pending = {"status": PENDING_STATUS}
        if self.config.emit_mode is EmitMode.FUNCTION_RESPONSE:
            self._respond(call_id, tool.name, pending, by, will_continue=True, scheduling=_SILENT)
        else:
            self._respond(call_id, tool.name, pending, by)
        self._spawn(self.streams.run, handle)

    async def _run_job(self, tool: Tool, call_id: str, args: dict[str, Any], by: str) -> None:
        """A long-running call: a ticket now, the result later with the same call id."""
        job = dispatch.new_job(tool, call_id, args)
        context = dispatch.make_context(tool, call_id, self.clock, self._emit)
        context.job_id = job.job_id
        context.progress = dispatch.JobProgressReporter(job, self.clock.now, 0.5, self._emit)
        self._respond(call_id, tool.name, job.ticket(), by, will_continue=True, scheduling=_SILENT)
        self._emit(JobUpdate(id=call_id, job_id=job.job_id, name=tool.name, state="running"))
        scope = anyio.CancelScope()
        self._regular[call_id] = scope
        try:
            await dispatch.run_job(job, tool, context, scope, secrets=self.config.secrets)
        finally:
            self._regular.pop(call_id, None)
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
        if job.state is JobState.FAILED and job.error:
            self._emit(ErrorEvent(message=job.error, where=tool.name, id=call_id))
        if job.state is JobState.CANCELLED:
            return
        if by == MODEL and self.config.emit_mode is EmitMode.TEXT:
            # A model with synchronous calls only took the ticket as the call's one answer:
            # the result follows as text, like a stream's emissions.
            result = job.final_response()
            self.outbox.post_emission(OutEmission(call_id, tool.name, result, True, _SILENT))
            self._emit(ToolResult(id=call_id, name=tool.name, response=result))
        else:
            self._respond(call_id, tool.name, job.final_response(), by)

    # ----------------------------------------------------------------- stops

    async def cancel(self, ids: Sequence[str]) -> None:
        """The model cancelled these calls (toolCallCancellation)."""
        for call_id in ids:
            scope = self._regular.get(call_id)
            if scope is not None:
                scope.cancel()
        handles = [self.streams.handles[i] for i in ids if i in self.streams.handles]
        if handles:
            await self.streams.stop_handles(handles, "cancelled by model", send_final=False)

    def forget_model_calls(self) -> None:
        """The model came back as a new session: it never issued the running model call ids.

        Answers for those calls would be refused or misread, so those streams end
        (without a final answer) and what waits for them is dropped; the event
        log keeps every emission, and the new session calls the tools it wants.
        Device calls are nobody's business but the device's: they go on.
        """
        handles = [h for h in self.streams.handles.values() if h.by == MODEL]
        dropped = self.outbox.drop_calls({h.call_id for h in handles})
        if handles or dropped:
            log.warning(
                "the model started a fresh session; stopping %d stream(s), dropping %d "
                "queued answer(s) for the old session",
                len(handles),
                dropped,
            )
        if handles:
            # Stopping takes a moment (cleanup runs); an emission made meanwhile must not
            # reach the new session as an answer to a call it never made.
            self.deliveries.forgotten.update(h.call_id for h in handles)
            self._spawn(self._stop_quietly, handles, "model session restarted")

    async def _stop_quietly(self, handles: list[StreamHandle], reason: str) -> None:
        try:
            await self.streams.stop_handles(handles, reason, send_final=False)
        finally:
            self.deliveries.forgotten.difference_update(h.call_id for h in handles)

    def cancel_plain(self) -> None:
        for scope in list(self._regular.values()):
            scope.cancel()

    def running(self, call_id: str) -> bool:
        return call_id in self.streams.handles or call_id in self._regular


__all__ = ["CallStats", "Calls", "Deliveries", "DeviceCall", "EmissionStats"]
