"""Tool dispatch shared by the live session and request-response turns.

Both runtimes answer a call the same way: an unknown tool or bad arguments get
an error answer (never silence), a plain tool's result (or its exception, as a
one-line error without secrets) answers the call, and a long-running tool runs
as a job whose progress goes to people and whose result goes to the model
later. Only how an answer travels differs, and that stays with each runtime.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from live import wire
from live.events import Event, JobProgress
from live.input_stream import InputStream
from live.jobs.records import Job, JobState, ProgressThrottle
from live.tool import Tool, ToolArgumentError, ToolContext, ToolUnavailable
from live.util.clock import Clock
from live.util.redact import redact, short_error

log = logging.getLogger("lookout.dispatch")


@dataclass(frozen=True)
class Resolved:
    tool: Tool
    args: dict[str, Any]


def resolve(tools: Mapping[str, Tool], name: str, args: Any) -> Resolved | str:
    """The tool and its checked arguments, or why the call cannot run (one line)."""
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return f"Unknown tool '{name}'. Available tools: {available}"
    try:
        checked = tool.validate(args if isinstance(args, dict) else {})
    except ToolArgumentError as exc:
        return str(exc)
    return Resolved(tool, checked)


def as_response(result: Any) -> dict[str, Any]:
    """A tool's return value as a FunctionResponse body."""
    return result if isinstance(result, dict) else {"result": result}


def error_response(message: str, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"status": "error", "error": redact(message, secrets)}


def make_context(
    tool: Tool,
    call_id: str,
    clock: Clock,
    publish: Callable[[Event], None],
    *,
    input_stream: InputStream[Any] | None = None,
    show: Callable[[wire.Blob], bool] | None = None,
) -> ToolContext:
    context = ToolContext(
        call_id=call_id,
        function_name=tool.name,
        clock=clock,
        input_stream=input_stream,
        logger=logging.getLogger(f"lookout.tool.{tool.name}"),
        publish=publish,
    )
    if show is not None:
        context.show = show
    return context


@dataclass(frozen=True)
class Outcome:
    """How a plain call ended: the answer, and the error (and where) if it failed."""

    response: dict[str, Any]
    error: str | None = None
    where: str = ""


async def invoke(
    tool: Tool,
    args: dict[str, Any],
    context: ToolContext,
    *,
    secrets: tuple[str, ...] = (),
    timeout_s: float | None = None,
) -> Outcome:
    """Run a plain tool to its answer; a failure or a time-out (on the call's clock) is an
    error answer."""
    try:
        with context.clock.fail_after(timeout_s):
            result = await tool.call(args, context)
    except TimeoutError:
        message = f"{tool.name} timed out after {timeout_s:g} s"
        return Outcome(error_response(message, secrets), message, "tool_call")
    except (ToolUnavailable, ToolArgumentError) as exc:
        # Expected: the answer says why, once; no error log and no exception name.
        message = redact(" ".join(str(exc).split()), secrets)
        return Outcome(error_response(message, secrets), message, tool.name)
    except Exception as exc:
        message = short_error(exc, secrets)
        log.error("tool %s (call %s) failed: %s", tool.name, context.call_id, message)
        return Outcome(error_response(message, secrets), message, tool.name)
    return Outcome(as_response(result))


# -------------------------------------------------------------------- jobs


def new_job(tool: Tool, call_id: str, args: dict[str, Any]) -> Job:
    return Job(
        job_id=f"job-{uuid.uuid4().hex[:10]}",
        call_id=call_id,
        name=tool.name,
        args=args,
        started_at=time.time(),
    )


class JobProgressReporter:
    """``ToolContext.progress`` of one job: clamped, throttled, for people only."""

    def __init__(
        self,
        job: Job,
        now: Callable[[], float],
        interval_s: float,
        emit: Callable[[Event], None],
    ) -> None:
        self.job = job
        self._throttle = ProgressThrottle(now, interval_s)
        self._emit = emit

    def __call__(self, fraction: float | None, message: str) -> None:
        job = self.job
        if job.state.ended:
            return
        if fraction is not None:
            fraction = min(1.0, max(0.0, float(fraction)))
        job.fraction, job.message = fraction, message
        if not self._throttle.admit(fraction):
            return
        self._emit(
            JobProgress(
                id=job.call_id, job_id=job.job_id, name=job.name, fraction=fraction, message=message
            )
        )


async def run_job(
    job: Job,
    tool: Tool,
    context: ToolContext,
    scope: anyio.CancelScope,
    *,
    secrets: tuple[str, ...] = (),
    cancel_reason: Callable[[], str] = lambda: "cancelled",
    ended_reason: str = "the session ended",
) -> None:
    """Run a job's tool to its end and record how it ended on ``job``.

    Cancelling ``scope`` cancels the job (``cancel_reason`` says why); cancelling
    the caller records ``ended_reason`` and propagates.
    """
    try:
        with scope:
            result = await tool.call(job.args, context)
            job.result = as_response(result)
            job.state = JobState.SUCCEEDED
            job.fraction = 1.0
        if job.state is JobState.RUNNING:
            job.state = JobState.CANCELLED
            job.error = cancel_reason() or "cancelled"
    except anyio.get_cancelled_exc_class():
        job.state = JobState.CANCELLED
        job.error = ended_reason
        raise
    except Exception as exc:
        job.state = JobState.FAILED
        job.error = short_error(exc, secrets)
        log.error("job %s (%s) failed: %s", job.job_id, job.name, job.error)
    finally:
        job.ended_at = time.time()


__all__ = [
    "JobProgressReporter",
    "Outcome",
    "Resolved",
    "as_response",
    "error_response",
    "invoke",
    "make_context",
    "new_job",
    "resolve",
    "run_job",
]
