"""Request-response mode: plain tools, long-running jobs, refusals, failures, the records."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from live.events import ErrorEvent, JobProgress, JobUpdate, ModelText, ToolCall, ToolResult
from live.input_stream import InputStream
from live.jobs.records import JobState, MemoryJobStore, SQLiteJobStore
from live.store.eventlog import MemoryEventLog, SQLiteEventLog, read_events
from live.testing import (
    ScriptedTurnModel,
    call,
    function_responses,
    last_function_responses,
    say,
)
from live.tool import ToolContext
from live.turns.conversation import ToolModeError, TurnConfig, TurnOutcome, TurnResult, TurnRunner
from live.turns.model import TurnModelError, TurnReply, TurnRequest
from live.util.clock import FakeClock
from tools.function_tool import FunctionTool

pytestmark = pytest.mark.anyio


def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    assert threading.current_thread() is not threading.main_thread()
    return {"sum": a + b}


async def watch(stream: InputStream) -> AsyncIterator[dict[str, Any]]:
    """A streaming tool: it needs live mode."""
    async for _ in stream:
        yield {"seen": 1}


class Gate:
    """A long-running job the test lets finish, reporting progress on the way."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.cleaned_up = False

    async def survey(self, minutes: float, context: ToolContext) -> dict[str, Any]:
        """Survey the scene for a while."""
        self.started.set()
        try:
            context.progress(0.25, "a quarter done")
            await self.release.wait()
            context.progress(1.0, "done")
            return {"summary": f"{minutes} minutes surveyed", "max": 4}
        finally:
            self.cleaned_up = True


def answer_after_tools(request: TurnRequest) -> TurnReply:
    responses = last_function_responses(request)
    if responses:
        return say("; ".join(json.dumps(r.response, sort_keys=True) for r in responses))
    return say("nothing to do")


def texts_in(request: TurnRequest) -> str:
    return json.dumps([dataclasses.asdict(c) for c in request.contents], default=str)


async def test_plain_tool_answers_once_and_the_model_gets_the_result_with_the_call_id() -> None:
    model = ScriptedTurnModel([call("add", {"a": 2, "b": 3}, id="c-1")], default=answer_after_tools)
    log = MemoryEventLog()
    runner = TurnRunner(model, [FunctionTool(add)], event_log=log)
    async with runner.open() as conv:
        result = await conv.ask("what is 2 + 3?")
    assert result.outcome is TurnOutcome.ANSWERED
    assert result.text == '{"sum": 5}'
    second = model.requests[1]
    (response,) = last_function_responses(second)
    assert (response.id, response.name, response.response) == ("c-1", "add", {"sum": 5})
    declared = [d.name for d in model.requests[0].declarations]
    assert declared == ["add"]
    kinds = [e.type for e in log.events]
    assert kinds == ["user_text", "tool_call", "tool_result", "model_text", "turn_complete"]


async def test_a_streaming_tool_is_refused_when_the_runner_is_built() -> None:
    with pytest.raises(ToolModeError) as info:
        TurnRunner(ScriptedTurnModel(), [FunctionTool(add), FunctionTool(watch)])
    message = str(info.value)
    assert message.startswith("watch is a streaming tool")
    for advice in ("live mode", "long-running", "paged"):
        assert advice in message


def test_a_tool_cannot_be_both_streaming_and_long_running() -> None:
    with pytest.raises(TypeError, match="cannot also be long-running"):
        FunctionTool(watch, long_running=True)


async def test_long_running_job_ticket_progress_and_result_with_the_same_call_id(
    tmp_path: Path,
) -> None:
    gate = Gate()
    model = ScriptedTurnModel(
        [call("survey", {"minutes": 2}, id="job-call-7")], default=answer_after_tools
    )
    db = tmp_path / "events.db"
    log = SQLiteEventLog(db)
    store = SQLiteJobStore(db)
    runner = TurnRunner(
        model,
        [FunctionTool(gate.survey, long_running=True)],
        event_log=log,
        job_store=store,
    )
    declaration = runner.declarations[0]
    assert "Long-running" in (declaration.description or "")
    async with runner.open() as conv:
        first = await conv.ask("survey for two minutes")
        # The ticket came back at once: the turn is over while the job still runs.
        (ticket,) = last_function_responses(model.requests[1])
        assert ticket.id == "job-call-7"
        assert ticket.response is not None and ticket.response["status"] == "started"
        job_id = ticket.response["job_id"]
        assert first.text == json.dumps({"job_id": job_id, "status": "started"}, sort_keys=True)
        assert conv.running_jobs == [job_id]
        await gate.started.wait()
        gate.release.set()
        later = [event async for event in conv.follow_up()]
    log.close()
    progress = [e for e in later if isinstance(e, JobProgress)]
    assert [p.fraction for p in progress] == [0.25, 1.0]
    states = [e.state for e in later if isinstance(e, JobUpdate)]
    assert states == ["succeeded"]
    # The result resumed the conversation with the ticket's call id and name.
    final = last_function_responses(model.requests[2])
    assert [(r.id, r.name) for r in final] == [("job-call-7", "survey")]
    assert final[0].response == {
        "job_id": job_id,
        "status": "succeeded",
        "summary": "2.0 minutes surveyed",
        "max": 4,
    }
    assert any(isinstance(e, ModelText) and "surveyed" in e.text for e in later)
    # Progress is for people: no request to the model ever carried it.
    for request in model.requests:
        assert "quarter" not in texts_in(request)
    recorded = [e["type"] for e in read_events(db)]
    assert recorded.count("job_progress") == 2
    assert [e["state"] for e in read_events(db, kind="job")] == ["running", "succeeded"]
    job = store.get(job_id)
    assert job is not None
    assert job.state is JobState.SUCCEEDED and job.delivered
    assert job.result == {"summary": "2.0 minutes surveyed", "max": 4}
    store.close()


async def test_a_job_survives_a_model_error_and_its_result_goes_with_the_next_request() -> None:
    gate = Gate()
    down = TurnModelError("503 service unavailable", retryable=True)
    model = ScriptedTurnModel(
        [call("survey", {"minutes": 1}, id="s-1"), say("started"), down, down],
        default=answer_after_tools,
    )
    store = MemoryJobStore()
    runner = TurnRunner(
        model,
        [FunctionTool(gate.survey, long_running=True)],
        TurnConfig(delivery_attempts=2, retry_backoff_s=0),
        job_store=store,
    )
    async with runner.open() as conv:
        await conv.ask("survey")
        gate.release.set()
        later = [event async for event in conv.follow_up()]
        errors = [e.message for e in later if isinstance(e, ErrorEvent)]
        assert errors[:2] == ["503 service unavailable"] * 2
        assert "has not reached the model yet" in errors[-1]
        (job,) = store.jobs()
        assert job.state is JobState.SUCCEEDED and not job.delivered
        # The next question carries the undelivered result; nothing was lost.
        result = await conv.ask("and?")
    assert result.outcome is TurnOutcome.ANSWERED
    last = model.requests[-1]
    delivered = [r for r in function_responses(last) if r.response.get("status") == "succeeded"]
    assert [(r.id, r.name) for r in delivered] == [("s-1", "survey")]
    stored = store.get(job.job_id)
    assert stored is not None and stored.delivered


async def test_cancelling_a_job_tells_the_model_and_records_it() -> None:
    gate = Gate()
    model = ScriptedTurnModel([call("survey", {"minutes": 5})], default=answer_after_tools)
    store = MemoryJobStore()
    log = MemoryEventLog()
    runner = TurnRunner(
        model, [FunctionTool(gate.survey, long_running=True)], event_log=log, job_store=store
    )
    async with runner.open() as conv:
        await conv.ask("survey")
        (job_id,) = conv.running_jobs
        await gate.started.wait()
        assert await conv.cancel_job(job_id, "asked to stop")
        assert not await conv.cancel_job(job_id)
        later = [event async for event in conv.follow_up()]
    assert gate.cleaned_up
    assert [e.state for e in later if isinstance(e, JobUpdate)] == ["cancelled"]
    (final,) = last_function_responses(model.requests[-1])
    assert final.response == {"job_id": job_id, "status": "cancelled", "error": "asked to stop"}
    # A model call without an id got one of ours in the records, and none on the wire.
    assert final.id is None
    calls = [e for e in log.events if isinstance(e, ToolCall)]
    assert calls[0].id.startswith("call-")
    stored = store.get(job_id)
    assert stored is not None and stored.state is JobState.CANCELLED


async def test_closing_the_conversation_cancels_running_jobs_and_records_why() -> None:
    gate = Gate()
    model = ScriptedTurnModel([call("survey", {"minutes": 5}), say("started")])
    store = MemoryJobStore()
    runner = TurnRunner(model, [FunctionTool(gate.survey, long_running=True)], job_store=store)
    async with runner.open() as conv:
        await conv.ask("survey")
        await gate.started.wait()
    assert gate.cleaned_up
    (job,) = store.jobs()
    assert job.state is JobState.CANCELLED
    assert job.error == "the conversation ended"
    assert len(model.requests) == 2  # nothing was sent after the close


async def test_a_failing_job_reports_its_error_to_the_model() -> None:
    async def broken(context: ToolContext) -> dict[str, Any]:
        """Always fails."""
        raise RuntimeError("camera gone, token=abc123secret")

    model = ScriptedTurnModel([call("broken", id="b")], default=answer_after_tools)
    runner = TurnRunner(model, [FunctionTool(broken, long_running=True)])
    async with runner.open() as conv:
        await conv.ask("go")
        later = [event async for event in conv.follow_up()]
    (update,) = [e for e in later if isinstance(e, JobUpdate)]
    assert update.state == "failed"
    assert update.error is not None and "camera gone" in update.error
    assert "abc123secret" not in update.error
    (final,) = last_function_responses(model.requests[-1])
    assert final.id == "b" and final.response is not None
    assert final.response["status"] == "failed"


async def test_bad_arguments_and_unknown_tools_get_clear_answers_and_the_turn_goes_on() -> None:
    model = ScriptedTurnModel(
        [
            TurnReply(
                calls=(
                    call("add", {"a": "two", "b": 3}, id="x").calls[0],
                    call("subtract", {"a": 1}, id="y").calls[0],
                )
            )
        ],
        default=answer_after_tools,
    )
    runner = TurnRunner(model, [FunctionTool(add)])
    async with runner.open() as conv:
        result = await conv.ask("compute")
    assert result.outcome is TurnOutcome.ANSWERED
    answers = {r.id: r.response for r in last_function_responses(model.requests[1])}
    assert answers["x"] == {"status": "error", "error": "add: a must be an integer, got str 'two'"}
    assert answers["y"] == {
        "status": "error",
        "error": "Unknown tool 'subtract'. Available tools: add",
    }


async def test_a_model_that_keeps_calling_tools_is_cut_off() -> None:
    model = ScriptedTurnModel(default=lambda request: call("add", {"a": 1, "b": 1}))
    runner = TurnRunner(model, [FunctionTool(add)], TurnConfig(max_steps=3))
    async with runner.open() as conv:
        result = await conv.ask("loop")
    assert result.outcome is TurnOutcome.TOO_MANY_STEPS
    assert len(model.requests) == 3
    assert any("after 3 steps" in e.message for e in result.events if isinstance(e, ErrorEvent))


async def test_a_refused_request_ends_the_turn_with_the_reason() -> None:
    model = ScriptedTurnModel([TurnModelError("400 bad request: unknown model", retryable=False)])
    runner = TurnRunner(model, [FunctionTool(add)])
    async with runner.open() as conv:
        result = await conv.ask("hello")
    assert result.outcome is TurnOutcome.MODEL_REFUSED
    (error,) = [e for e in result.events if isinstance(e, ErrorEvent)]
    assert error.where == "model" and "unknown model" in error.message


async def test_a_slow_plain_tool_times_out_with_an_answer_on_the_clock() -> None:
    async def slow() -> dict[str, Any]:
        """Never returns."""
        await anyio.sleep_forever()
        return {}

    clock = FakeClock()
    model = ScriptedTurnModel([call("slow", id="s")], default=answer_after_tools)
    # Two minutes of time-out, on virtual time: the test does not wait for them.
    runner = TurnRunner(model, [FunctionTool(slow)], TurnConfig(tool_timeout_s=120), clock=clock)
    results: list[TurnResult] = []
    async with runner.open() as conv, anyio.create_task_group() as tg:

        async def ask() -> None:
            results.append(await conv.ask("go"))

        tg.start_soon(ask)
        await clock.run_for(119)
        assert not results  # still waiting for the tool
        await clock.run_for(2)
    answers = [e for e in results[0].events if isinstance(e, ToolResult)]
    assert answers[0].response == {"status": "error", "error": "slow timed out after 120 s"}


async def test_a_job_milestone_reaches_the_model_before_the_result() -> None:
    async def scan(context: ToolContext) -> dict[str, Any]:
        """Scans in two halves."""
        context.milestone({"first_half": 3})
        return {"total": 5}

    model = ScriptedTurnModel([call("scan", id="m")], default=answer_after_tools)
    runner = TurnRunner(model, [FunctionTool(scan, long_running=True)])
    async with runner.open() as conv:
        await conv.ask("scan")
        [event async for event in conv.follow_up()]
    sent = [
        r.response
        for request in model.requests
        for r in last_function_responses(request)
        if r.id == "m"
    ]
    statuses = [s["status"] for s in sent if s]
    # The ticket, then the milestone, then the result: in the order the job made them.
    assert statuses == ["started", "running", "succeeded"]
    assert {"first_half": 3}.items() <= next(
        s for s in sent if s and s["status"] == "running"
    ).items()
