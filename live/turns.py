"""Request-response mode: one question, the tool round trips it needs, one answer.

``TurnRunner(model, tools).open()`` is an async context manager holding a
``Conversation`` and a task group; nothing outlives the ``async with`` block::

    async with TurnRunner(model, tools).open() as conv:
        async for event in conv.run_async("how many people?"):
            ...
        async for event in conv.follow_up():   # jobs' progress and late results
            ...

Tools behave as they can outside a live session:

* a plain tool answers once;
* a long-running tool answers at once with a ticket and runs as a job in the
  conversation's task group; its progress goes to people (events, log, job
  store) and never to the model; when it ends, its result is sent to the model
  as a FunctionResponse with the *same* call id and name, which resumes the
  conversation. A job outlives a failed model call: its result stays in the
  history and the job store and goes to the model with the next request;
* a streaming (async-generator) tool is refused when the runner is built,
  because here nothing would consume its emissions (ADK answers such a call
  with ``{"result": <generator object>}`` and runs nothing).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import itertools
import json
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream
from google.genai import types

from live import dispatch
from live.backoff import Backoff
from live.clock import Clock, MonotonicClock
from live.eventlog import EventLog
from live.events import (
    ErrorEvent,
    Event,
    JobUpdate,
    ModelText,
    ToolCall,
    ToolResult,
    TurnComplete,
    Usage,
    UserText,
)
from live.jobs import Job, JobState, JobStore, MemoryJobStore
from live.model import FunctionCallRequest
from live.redact import redact
from live.tool import Tool, check_unique_names
from live.turn_model import TurnModel, TurnModelError, TurnReply, TurnRequest

log = logging.getLogger("lookout.turns")


class ToolModeError(TypeError):
    """A tool that cannot work in the mode the runner was built for."""


def streaming_refusal(tool_name: str) -> ToolModeError:
    return ToolModeError(
        f"{tool_name} is a streaming tool (its body is an async generator) and cannot run in "
        "request-response mode: nothing here would consume its emissions, so it would never "
        "run. Use it in live mode (Runner.run_live, `lookout run`), or make it a long-running "
        "tool (FunctionTool(..., long_running=True): a ticket at once, the result later), or "
        "a paged tool (one page of results per call, with a cursor)."
    )


@dataclass(frozen=True)
class TurnConfig:
    system_instruction: str | None = None
    max_steps: int = 8  # model calls in one turn, so a model looping on tools is cut off
    tool_timeout_s: float = 60.0  # plain tools; jobs run until done or cancelled
    progress_interval_s: float = 0.5  # at most one progress event per job per interval
    delivery_attempts: int = 3  # model calls tried for a job's result before waiting
    retry_backoff_s: float = 1.0
    close_timeout_s: float = 2.0  # jobs get this long to wind down when the runner closes
    secrets: tuple[str, ...] = ()


class TurnOutcome(enum.Enum):
    ANSWERED = "answered"
    MODEL_FAILED = "model_failed"  # may succeed if tried again
    MODEL_REFUSED = "model_refused"  # will not succeed as it is
    TOO_MANY_STEPS = "too_many_steps"


@dataclass
class TurnResult:
    text: str
    outcome: TurnOutcome
    events: list[Event] = field(default_factory=list)


class TurnRunner:
    """Holds a turn model, its tools and where things are recorded."""

    def __init__(
        self,
        model: TurnModel,
        tools: Sequence[Tool] = (),
        config: TurnConfig | None = None,
        *,
        clock: Clock | None = None,
        event_log: EventLog | None = None,
        job_store: JobStore | None = None,
    ) -> None:
        check_unique_names(tools)
        for tool in tools:
            if tool.is_streaming:
                raise streaming_refusal(tool.name)
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.config = config or TurnConfig()
        if self.config.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.clock = clock or MonotonicClock()
        self.event_log = event_log
        self.job_store: JobStore = job_store if job_store is not None else MemoryJobStore()
        self.declarations = tuple(tool.declaration() for tool in tools)

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Conversation]:
        async with anyio.create_task_group() as tg:
            conversation = Conversation(self, tg)
            try:
                yield conversation
            finally:
                with anyio.CancelScope(shield=True):
                    await conversation._close()
                tg.cancel_scope.cancel()


@dataclass
class _RunningJob:
    job: Job
    tool: Tool
    wire_id: str | None  # the model's own call id (None when it gave none)
    progress: dispatch.JobProgressReporter
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancel_reason: str = ""
    done: anyio.Event = field(default_factory=anyio.Event)


_Emit = Callable[[Event], None]


class Conversation:
    def __init__(self, runner: TurnRunner, tg: TaskGroup) -> None:
        self.runner = runner
        self.config = runner.config
        self.clock = runner.clock
        self.started_at = self.clock.now()
        self.history: list[types.Content] = []
        self._tg = tg
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._jobs: dict[str, _RunningJob] = {}
        self._pending = 0  # jobs not yet ended and delivered
        self._closing = False
        self._undelivered: set[str] = set()  # jobs whose result the model has not seen yet
        self._carried: dict[str, Job] = {}  # ended jobs of earlier conversations (carry_over)
        self._to_carry: list[Job] = []  # ... waiting for the next message
        self.last_outcome: TurnOutcome | None = None
        # Events of jobs and of the turns their results resume. Unbounded on purpose:
        # they are few (progress is throttled) and none may be lost before follow_up().
        self._bg_send, self._bg_recv = anyio.create_memory_object_stream[Event | None](math.inf)
        self._bg_emit = self._emitter(self._bg_send)

    # ---------------------------------------------------------------- public

    async def run_async(self, message: str) -> AsyncIterator[Event]:
        """One request-response turn: every event as it happens, ending with the answer.

        The turn runs in the conversation's task group, so a caller that stops
        reading early does not leave the conversation half-way through a step.
        """
        send, recv = anyio.create_memory_object_stream[Event](math.inf)
        parts = [types.Part(text=message)]
        if self._to_carry:
            parts.insert(0, types.Part(text=_carried_text(self._to_carry)))
            for job in self._to_carry:
                self._carried[job.job_id] = job
                self._undelivered.add(job.job_id)
            self._to_carry = []
        content = types.Content(role="user", parts=parts)

        async def turn() -> None:
            async with send:
                emit = self._emitter(send)
                emit(UserText(text=message))
                self.last_outcome = await self._turn([content], emit)

        self._tg.start_soon(turn)
        async with recv:
            async for event in recv:
                yield event

    async def ask(self, message: str) -> TurnResult:
        """``run_async`` collected: the model's text and every event of the turn."""
        events = [event async for event in self.run_async(message)]
        texts = [e.text for e in events if isinstance(e, ModelText)]
        outcome = self.last_outcome or TurnOutcome.MODEL_FAILED
        return TurnResult("\n".join(texts), outcome, events)

    async def follow_up(self) -> AsyncIterator[Event]:
        """Jobs' progress and state, and the turns their results resume, until no job runs."""
        while True:
            if self._pending == 0 and self._bg_recv.statistics().current_buffer_used == 0:
                return
            item = await self._bg_recv.receive()
            if item is not None:
                yield item

    @property
    def jobs(self) -> list[Job]:
        """Jobs of this conversation, as they stand now."""
        return [dataclasses.replace(r.job) for r in self._jobs.values()]

    @property
    def running_jobs(self) -> list[str]:
        return [r.job.job_id for r in self._jobs.values() if r.job.state is JobState.RUNNING]

    def carry_over(self, jobs: Sequence[Job]) -> None:
        """Results of ended jobs from an earlier conversation that never reached the model.

        The call that started them is not in this history, so they cannot go as
        FunctionResponses; they go as text in front of the next message instead,
        and are marked delivered once a model call with them succeeds.
        """
        self._to_carry += [job for job in jobs if job.state.ended and not job.delivered]

    async def cancel_job(self, job_id: str, reason: str = "cancelled") -> bool:
        """Cancel a running job and wait until it has ended; False if it was not running."""
        running = self._jobs.get(job_id)
        if running is None or running.job.state.ended:
            return False
        running.cancel_reason = reason
        running.scope.cancel()
        await running.done.wait()
        return True

    # ---------------------------------------------------------------- turns

    async def _turn(self, new: list[types.Content], emit: _Emit) -> TurnOutcome:
        """Add ``new`` to the history and call the model until it answers without calls.

        The history only grows: what a failed model call did not answer stays in
        it and goes with the next request, so no tool or job result is lost.
        """
        async with self._lock:
            self.history.extend(new)
            for _ in range(self.config.max_steps):
                request = TurnRequest(
                    tuple(self.history),
                    self.runner.declarations,
                    self.config.system_instruction,
                )
                try:
                    reply = await self.runner.model.generate(request)
                except TurnModelError as exc:
                    message = redact(str(exc), self.config.secrets)
                    log.error("model call failed: %s", message)
                    outcome = (
                        TurnOutcome.MODEL_FAILED if exc.retryable else TurnOutcome.MODEL_REFUSED
                    )
                    emit(ErrorEvent(message=message, where="model"))
                    return outcome
                await self._mark_delivered()
                content = _reply_content(reply)
                if content.parts:
                    # An empty reply is not history: the API refuses empty contents.
                    self.history.append(content)
                if reply.usage is not None:
                    emit(
                        Usage(
                            prompt_tokens=reply.usage.prompt_tokens,
                            response_tokens=reply.usage.response_tokens,
                            total_tokens=reply.usage.total_tokens,
                        )
                    )
                if reply.text:
                    emit(ModelText(text=reply.text))
                if not reply.calls:
                    emit(TurnComplete())
                    return TurnOutcome.ANSWERED
                parts = await self._answer_calls(reply.calls, emit)
                self.history.append(types.Content(role="user", parts=parts))
            message = (
                f"the model was still calling tools after {self.config.max_steps} steps; "
                "the turn was ended"
            )
            emit(ErrorEvent(message=message, where="turn"))
            return TurnOutcome.TOO_MANY_STEPS

    async def _answer_calls(
        self, calls: Sequence[FunctionCallRequest], emit: _Emit
    ) -> list[types.Part]:
        responses: list[dict[str, Any]] = [{} for _ in calls]

        async def answer(index: int, call: FunctionCallRequest) -> None:
            responses[index] = await self._dispatch(call, emit)

        # Independent calls run side by side; answers keep the model's order.
        async with anyio.create_task_group() as tg:
            for index, call in enumerate(calls):
                tg.start_soon(answer, index, call)
        return [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id or None, name=call.name, response=response
                )
            )
            for call, response in zip(calls, responses, strict=True)
        ]

    async def _dispatch(self, call: FunctionCallRequest, emit: _Emit) -> dict[str, Any]:
        call_id = call.id or f"call-{next(self._ids)}"
        args = call.args if isinstance(call.args, dict) else {}
        emit(ToolCall(id=call_id, name=call.name, args=args))
        response = await self._response_for(call, call_id, args, emit)
        emit(ToolResult(id=call_id, name=call.name, response=response))
        return response

    async def _response_for(
        self, call: FunctionCallRequest, call_id: str, args: Mapping[str, Any], emit: _Emit
    ) -> dict[str, Any]:
        resolved = dispatch.resolve(self.runner.tools, call.name, args)
        if isinstance(resolved, str):
            return self._error(emit, call_id, resolved)
        tool, checked = resolved.tool, resolved.args
        if tool.is_long_running:
            job = await self._start_job(tool, call_id, call.id or None, checked, emit)
            return job.ticket()
        context = dispatch.make_context(tool, call_id, self.clock, emit)
        outcome = await dispatch.invoke(
            tool,
            checked,
            context,
            secrets=self.config.secrets,
            timeout_s=self.config.tool_timeout_s,
        )
        if outcome.error is not None:
            message = redact(outcome.error, self.config.secrets)
            emit(ErrorEvent(message=message, where=outcome.where, id=call_id))
        return outcome.response

    def _error(
        self, emit: _Emit, call_id: str, message: str, *, where: str = "tool_call"
    ) -> dict[str, Any]:
        message = redact(message, self.config.secrets)
        emit(ErrorEvent(message=message, where=where, id=call_id))
        return dispatch.error_response(message)

    # ----------------------------------------------------------------- jobs

    async def _start_job(
        self,
        tool: Tool,
        call_id: str,
        wire_id: str | None,
        args: dict[str, Any],
        emit: _Emit,
    ) -> Job:
        job = dispatch.new_job(tool, call_id, args)
        progress = dispatch.JobProgressReporter(
            job, self.clock.now, self.config.progress_interval_s, self._bg_emit
        )
        running = _RunningJob(job, tool, wire_id, progress)
        self._jobs[job.job_id] = running
        self._pending += 1
        await self._store(job)
        emit(JobUpdate(id=call_id, job_id=job.job_id, name=tool.name, state=job.state.value))
        self._tg.start_soon(self._run_job, running)
        return job

    async def _run_job(self, running: _RunningJob) -> None:
        job, tool = running.job, running.tool
        emit = self._bg_emit
        context = dispatch.make_context(tool, job.call_id, self.clock, emit)
        context.job_id = job.job_id
        context.progress = running.progress
        context.milestone = lambda payload: self._milestone(running, payload)
        try:
            try:
                await dispatch.run_job(
                    job,
                    tool,
                    context,
                    running.scope,
                    secrets=self.config.secrets,
                    cancel_reason=lambda: running.cancel_reason,
                    ended_reason="the conversation ended",
                )
            finally:
                with anyio.CancelScope(shield=True):
                    await self._store(job)
                emit(
                    JobUpdate(
                        id=job.call_id,
                        job_id=job.job_id,
                        name=job.name,
                        state=job.state.value,
                        result=job.result,
                        error=job.error,
                    )
                )
                running.done.set()
            if not self._closing:
                await self._deliver(running, job.final_response(), emit)
        finally:
            self._pending -= 1
            self._wake_follow_up()

    def _wake_follow_up(self) -> None:
        """Let follow_up() check whether anything is still pending."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._bg_send.send_nowait(None)

    def _milestone(self, running: _RunningJob, payload: dict[str, Any]) -> None:
        job = running.job
        if job.state.ended or self._closing:
            return
        response = {**payload, "job_id": job.job_id, "status": "running"}
        emit = self._bg_emit
        self._pending += 1

        async def deliver() -> None:
            try:
                await self._deliver(running, response, emit, final=False)
            finally:
                self._pending -= 1
                self._wake_follow_up()

        self._tg.start_soon(deliver)

    async def _deliver(
        self,
        running: _RunningJob,
        response: dict[str, Any],
        emit: _Emit,
        *,
        final: bool = True,
    ) -> None:
        """Send a job's result to the model with the ticket's call id; retry a failed model."""
        job = running.job
        part = types.Part(
            function_response=types.FunctionResponse(
                id=running.wire_id, name=job.name, response=response
            )
        )
        emit(ToolResult(id=job.call_id, name=job.name, response=response))
        if final:
            self._undelivered.add(job.job_id)
        new = [types.Content(role="user", parts=[part])]
        for attempt in range(self.config.delivery_attempts):
            outcome = await self._turn(new, emit)
            new = []  # it is in the history now, whatever the model did
            if outcome is not TurnOutcome.MODEL_FAILED or self._closing:
                break
            if attempt + 1 < self.config.delivery_attempts:
                await self.clock.sleep(
                    Backoff(self.config.retry_backoff_s, 3600).delay(attempt + 1)
                )
        if final and job.job_id in self._undelivered:
            emit(
                ErrorEvent(
                    message=(
                        f"the result of {job.job_id} has not reached the model yet; it is kept "
                        "in the job store and goes to the model with the next message (a later "
                        "conversation on the same store carries it over)"
                    ),
                    where="job",
                    id=job.call_id,
                )
            )

    async def _mark_delivered(self) -> None:
        """A model call succeeded: every result in the history has now reached the model."""
        for job_id in list(self._undelivered):
            running = self._jobs.get(job_id)
            job = running.job if running is not None else self._carried.get(job_id)
            if job is None:
                continue
            self._undelivered.discard(job_id)
            job.delivered = True
            await self._store(job)

    async def _store(self, job: Job) -> None:
        try:
            await anyio.to_thread.run_sync(self.runner.job_store.put, dataclasses.replace(job))
        except Exception:
            log.exception("job store failed for %s", job.job_id)

    # --------------------------------------------------------------- events

    def _emitter(
        self, stream: MemoryObjectSendStream[Event] | MemoryObjectSendStream[Event | None]
    ) -> _Emit:
        def emit(event: Event) -> None:
            if event.t == 0.0:
                event = dataclasses.replace(event, t=self.clock.now() - self.started_at)
            if self.runner.event_log is not None:
                try:
                    self.runner.event_log.record(event)
                except Exception:
                    log.exception("event log failed")
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                stream.send_nowait(event)

        return emit

    async def _close(self) -> None:
        self._closing = True
        running = [r for r in self._jobs.values() if not r.job.state.ended]
        for job in running:
            job.cancel_reason = "the conversation ended"
            job.scope.cancel()
        with anyio.move_on_after(self.config.close_timeout_s):
            for job in running:
                await job.done.wait()
        self._bg_send.close()


def _carried_text(jobs: Sequence[Job]) -> str:
    lines = [json.dumps({"tool": job.name, **job.final_response()}) for job in jobs]
    return "Results of earlier long-running jobs that had not reached you:\n" + "\n".join(lines)


def _reply_content(reply: TurnReply) -> types.Content:
    if reply.content is not None:
        return reply.content
    parts: list[types.Part] = []
    if reply.text:
        parts.append(types.Part(text=reply.text))
    for call in reply.calls:
        parts.append(
            types.Part(
                function_call=types.FunctionCall(id=call.id or None, name=call.name, args=call.args)
            )
        )
    return types.Content(role="model", parts=parts)


__all__ = [
    "Conversation",
    "ToolModeError",
    "TurnConfig",
    "TurnOutcome",
    "TurnResult",
    "TurnRunner",
    "streaming_refusal",
]
