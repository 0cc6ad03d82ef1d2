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

The jobs and the delivery of their results are ``live.turns.jobs``; how turns
are configured and how one ended, ``live.turns.config``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from live import dispatch, wire
from live.events import (
    ErrorEvent,
    Event,
    ModelText,
    ToolCall,
    ToolResult,
    TurnComplete,
    Usage,
    UserText,
)
from live.jobs.records import Job, JobStore, MemoryJobStore
from live.model import FunctionCallRequest
from live.store.eventlog import EventLog
from live.tool import Tool, check_unique_names
from live.turns.config import TurnConfig, TurnOutcome, TurnResult
from live.turns.jobs import ConversationJobs, Emit
from live.turns.model import TurnModel, TurnModelError, TurnReply, TurnRequest
from live.util.clock import Clock, MonotonicClock
from live.util.redact import redact

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


class Conversation:
    def __init__(self, runner: TurnRunner, tg: TaskGroup) -> None:
        self.runner = runner
        self.config = runner.config
        self.clock = runner.clock
        self.started_at = self.clock.now()
        self.history: list[wire.Content] = []
        self._tg = tg
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self.last_outcome: TurnOutcome | None = None
        # Events of jobs and of the turns their results resume. Unbounded on purpose:
        # they are few (progress is throttled) and none may be lost before follow_up().
        self._bg_send, self._bg_recv = anyio.create_memory_object_stream[Event | None](math.inf)
        self._jobs = ConversationJobs(
            tg,
            self.config,
            self.clock,
            runner.job_store,
            emit=self._emitter(self._bg_send),
            wake=self._wake_follow_up,
            turn=self._turn,
        )

    # ---------------------------------------------------------------- public

    async def run_async(self, message: str) -> AsyncIterator[Event]:
        """One request-response turn: every event as it happens, ending with the answer.

        The turn runs in the conversation's task group, so a caller that stops
        reading early does not leave the conversation half-way through a step.
        """
        send, recv = anyio.create_memory_object_stream[Event](math.inf)
        parts = [wire.Part(text=message)]
        carried = self._jobs.carried_part()
        if carried is not None:
            parts.insert(0, carried)
        content = wire.Content(role="user", parts=parts)

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
            if self._jobs.pending == 0 and self._bg_recv.statistics().current_buffer_used == 0:
                return
            item = await self._bg_recv.receive()
            if item is not None:
                yield item

    @property
    def jobs(self) -> list[Job]:
        """Jobs of this conversation, as they stand now."""
        return self._jobs.jobs

    @property
    def running_jobs(self) -> list[str]:
        return self._jobs.running_jobs

    def carry_over(self, jobs: Sequence[Job]) -> None:
        """Results of ended jobs from an earlier conversation that never reached the model.

        The call that started them is not in this history, so they cannot go as
        FunctionResponses; they go as text in front of the next message instead,
        and are marked delivered once a model call with them succeeds.
        """
        self._jobs.carry_over(jobs)

    async def cancel_job(self, job_id: str, reason: str = "cancelled") -> bool:
        """Cancel a running job and wait until it has ended; False if it was not running."""
        return await self._jobs.cancel(job_id, reason)

    # ---------------------------------------------------------------- turns

    async def _turn(self, new: list[wire.Content], emit: Emit) -> TurnOutcome:
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
                await self._jobs.mark_delivered()
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
                            prompt_by_modality=dict(reply.usage.prompt_by_modality),
                        )
                    )
                if reply.text:
                    emit(ModelText(text=reply.text))
                if not reply.calls:
                    emit(TurnComplete())
                    return TurnOutcome.ANSWERED
                parts = await self._answer_calls(reply.calls, emit)
                self.history.append(wire.Content(role="user", parts=parts))
            message = (
                f"the model was still calling tools after {self.config.max_steps} steps; "
                "the turn was ended"
            )
            emit(ErrorEvent(message=message, where="turn"))
            return TurnOutcome.TOO_MANY_STEPS

    async def _answer_calls(
        self, calls: Sequence[FunctionCallRequest], emit: Emit
    ) -> list[wire.Part]:
        responses: list[dict[str, Any]] = [{} for _ in calls]

        async def answer(index: int, call: FunctionCallRequest) -> None:
            responses[index] = await self._dispatch(call, emit)

        # Independent calls run side by side; answers keep the model's order.
        async with anyio.create_task_group() as tg:
            for index, call in enumerate(calls):
                tg.start_soon(answer, index, call)
        return [
            wire.Part(
                function_response=wire.FunctionResponse(
                    id=call.id or None, name=call.name, response=response
                )
            )
            for call, response in zip(calls, responses, strict=True)
        ]

    async def _dispatch(self, call: FunctionCallRequest, emit: Emit) -> dict[str, Any]:
        call_id = call.id or f"call-{next(self._ids)}"
        args = call.args if isinstance(call.args, dict) else {}
        emit(ToolCall(id=call_id, name=call.name, args=args))
        response = await self._response_for(call, call_id, args, emit)
        emit(ToolResult(id=call_id, name=call.name, response=response))
        return response

    async def _response_for(
        self, call: FunctionCallRequest, call_id: str, args: Mapping[str, Any], emit: Emit
    ) -> dict[str, Any]:
        resolved = dispatch.resolve(self.runner.tools, call.name, args)
        if isinstance(resolved, str):
            return self._error(emit, call_id, resolved)
        tool, checked = resolved.tool, resolved.args
        if tool.is_long_running:
            job = await self._jobs.start(tool, call_id, call.id or None, checked, emit)
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
        self, emit: Emit, call_id: str, message: str, *, where: str = "tool_call"
    ) -> dict[str, Any]:
        message = redact(message, self.config.secrets)
        emit(ErrorEvent(message=message, where=where, id=call_id))
        return dispatch.error_response(message)

    def _wake_follow_up(self) -> None:
        """Let follow_up() check whether anything is still pending."""
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._bg_send.send_nowait(None)

    # --------------------------------------------------------------- events

    def _emitter(
        self, stream: MemoryObjectSendStream[Event] | MemoryObjectSendStream[Event | None]
    ) -> Emit:
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
        await self._jobs.close()
        self._bg_send.close()


def _reply_content(reply: TurnReply) -> wire.Content:
    if reply.content is not None:
        return reply.content
    parts: list[wire.Part] = []
    if reply.text:
        parts.append(wire.Part(text=reply.text))
    for call in reply.calls:
        parts.append(
            wire.Part(
                function_call=wire.FunctionCall(id=call.id or None, name=call.name, args=call.args)
            )
        )
    return wire.Content(role="model", parts=parts)


__all__ = [
    "Conversation",
    "ToolModeError",
    "TurnConfig",
    "TurnOutcome",
    "TurnResult",
    "TurnRunner",
    "streaming_refusal",
]
