"""The long-running jobs of one conversation, and the delivery of their results.

A job runs in the conversation's task group. Its progress goes to people
(events, log, job store) and never to the model; when it ends, its result goes
to the model as a FunctionResponse with the ticket's call id and name, which
resumes the conversation, and a failed model call is retried. A result the
model has not seen stays in the history and the job store; results of an
earlier conversation (``carry_over``) go as text in front of the next message.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from live import dispatch, wire
from live.events import ErrorEvent, Event, JobUpdate, ToolResult
from live.jobs.records import Job, JobState, JobStore
from live.tool import Tool
from live.turns.config import TurnConfig, TurnOutcome
from live.util.backoff import Backoff
from live.util.clock import Clock
from live.util.signal import Wakeup

log = logging.getLogger("lookout.turns")

Emit = Callable[[Event], None]
Turn = Callable[[list[wire.Content], Emit], Awaitable[TurnOutcome]]
"""The conversation's turn: add contents to the history and call the model until it answers."""


@dataclass
class _RunningJob:
    job: Job
    tool: Tool
    wire_id: str | None  # the model's own call id (None when it gave none)
    progress: dispatch.JobProgressReporter
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancel_reason: str = ""
    done: anyio.Event = field(default_factory=anyio.Event)
    # A job's deliveries (milestones, then its result) reach the model in the order the
    # job made them: each takes a ticket when made and waits for its turn.
    tickets: int = 0
    turn: int = 0
    turn_changed: Wakeup = field(default_factory=Wakeup)

    def ticket(self) -> int:
        self.tickets += 1
        return self.tickets - 1


class ConversationJobs:
    """Starts, runs, cancels and delivers the jobs of one conversation."""

    def __init__(
        self,
        tg: TaskGroup,
        config: TurnConfig,
        clock: Clock,
        job_store: JobStore,
        *,
        emit: Emit,
        wake: Callable[[], None],
        turn: Turn,
    ) -> None:
        self._tg = tg
        self.config = config
        self.clock = clock
        self._job_store = job_store
        self._emit = emit  # the background stream, read by follow_up()
        self._wake = wake  # follow_up() checks whether anything is still pending
        self._turn = turn
        self._running: dict[str, _RunningJob] = {}
        self.pending = 0  # jobs not yet ended and delivered
        self.closing = False
        self._undelivered: set[str] = set()  # jobs whose result the model has not seen yet
        self._carried: dict[str, Job] = {}  # ended jobs of earlier conversations (carry_over)
        self._to_carry: list[Job] = []  # ... waiting for the next message

    # ---------------------------------------------------------------- the jobs

    @property
    def jobs(self) -> list[Job]:
        return [dataclasses.replace(r.job) for r in self._running.values()]

    @property
    def running_jobs(self) -> list[str]:
        return [r.job.job_id for r in self._running.values() if r.job.state is JobState.RUNNING]

    async def start(
        self,
        tool: Tool,
        call_id: str,
        wire_id: str | None,
        args: dict[str, Any],
        emit: Emit,
    ) -> Job:
        job = dispatch.new_job(tool, call_id, args)
        progress = dispatch.JobProgressReporter(
            job, self.clock.now, self.config.progress_interval_s, self._emit
        )
        running = _RunningJob(job, tool, wire_id, progress)
        self._running[job.job_id] = running
        self.pending += 1
        await self._store(job)
        emit(JobUpdate(id=call_id, job_id=job.job_id, name=tool.name, state=job.state.value))
        self._tg.start_soon(self._run, running)
        return job

    async def cancel(self, job_id: str, reason: str) -> bool:
        running = self._running.get(job_id)
        if running is None or running.job.state.ended:
            return False
        running.cancel_reason = reason
        running.scope.cancel()
        await running.done.wait()
        return True

    async def close(self) -> None:
        """Cancel what still runs and give it ``close_timeout_s`` to wind down."""
        self.closing = True
        running = [r for r in self._running.values() if not r.job.state.ended]
        for job in running:
            job.cancel_reason = "the conversation ended"
            job.scope.cancel()
        with self.clock.move_on_after(self.config.close_timeout_s):
            for job in running:
                await job.done.wait()

    async def _run(self, running: _RunningJob) -> None:
        job, tool = running.job, running.tool
        emit = self._emit
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
            if not self.closing:
                await self._deliver(running, job.final_response(), emit, running.ticket())
        finally:
            self.pending -= 1
            self._wake()

    def _milestone(self, running: _RunningJob, payload: dict[str, Any]) -> None:
        job = running.job
        if job.state.ended or self.closing:
            return
        response = {**payload, "job_id": job.job_id, "status": "running"}
        emit = self._emit
        self.pending += 1
        ticket = running.ticket()

        async def deliver() -> None:
            try:
                await self._deliver(running, response, emit, ticket, final=False)
            finally:
                self.pending -= 1
                self._wake()

        self._tg.start_soon(deliver)

    # ---------------------------------------------------------------- delivery

    async def _deliver(
        self,
        running: _RunningJob,
        response: dict[str, Any],
        emit: Emit,
        ticket: int,
        *,
        final: bool = True,
    ) -> None:
        """Send a job's result to the model with the ticket's call id; retry a failed model."""
        while running.turn != ticket:
            await running.turn_changed.wait()
        try:
            await self._send(running, response, emit, final=final)
        finally:
            running.turn += 1
            running.turn_changed.set()

    async def _send(
        self, running: _RunningJob, response: dict[str, Any], emit: Emit, *, final: bool
    ) -> None:
        job = running.job
        part = wire.Part(
            function_response=wire.FunctionResponse(
                id=running.wire_id, name=job.name, response=response
            )
        )
        emit(ToolResult(id=job.call_id, name=job.name, response=response))
        if final:
            self._undelivered.add(job.job_id)
        new = [wire.Content(role="user", parts=[part])]
        for attempt in range(self.config.delivery_attempts):
            outcome = await self._turn(new, emit)
            new = []  # it is in the history now, whatever the model did
            if outcome is not TurnOutcome.MODEL_FAILED or self.closing:
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

    async def mark_delivered(self) -> None:
        """A model call succeeded: every result in the history has now reached the model."""
        for job_id in list(self._undelivered):
            running = self._running.get(job_id)
            job = running.job if running is not None else self._carried.get(job_id)
            if job is None:
                continue
            self._undelivered.discard(job_id)
            job.delivered = True
            await self._store(job)

    async def _store(self, job: Job) -> None:
        try:
            await anyio.to_thread.run_sync(self._job_store.put, dataclasses.replace(job))
        except Exception:
            log.exception("job store failed for %s", job.job_id)

    # ---------------------------------------------------------------- carry-over

    def carry_over(self, jobs: Sequence[Job]) -> None:
        self._to_carry += [job for job in jobs if job.state.ended and not job.delivered]

    def carried_part(self) -> wire.Part | None:
        """The results carried over, as text for the next message; None if there are none.

        They count as undelivered from now on, until a model call with them succeeds.
        """
        if not self._to_carry:
            return None
        part = wire.Part(text=_carried_text(self._to_carry))
        for job in self._to_carry:
            self._carried[job.job_id] = job
            self._undelivered.add(job.job_id)
        self._to_carry = []
        return part


def _carried_text(jobs: Sequence[Job]) -> str:
    lines = [json.dumps({"tool": job.name, **job.final_response()}) for job in jobs]
    return "Results of earlier long-running jobs that had not reached you:\n" + "\n".join(lines)


__all__ = ["ConversationJobs", "Emit", "Turn"]
