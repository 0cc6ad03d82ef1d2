"""The live session: one model connection, the request queue, tools and streams.

``Runner.run_live(queue)`` is an async context manager. Inside it everything
(queue pump, model sender and receiver, reconnects, tool calls, streams) runs
in one anyio task group, so nothing outlives the ``async with`` block::

    async with runner.run_live(queue) as session:
        async for event in session:
            ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from google.genai import types

from live.clock import Clock, MonotonicClock
from live.config import PENDING_STATUS, EmitMode, SessionConfig
from live.eventlog import EventLog
from live.events import (
    ConnectionState,
    Emission,
    ErrorEvent,
    Event,
    Interrupted,
    JobProgress,
    JobUpdate,
    ModelAudio,
    ModelText,
    StreamStarted,
    StreamStopped,
    ToolCall,
    ToolResult,
    Transcript,
    TurnComplete,
    Usage,
)
from live.input_stream import InputStream
from live.jobs import ProgressThrottle
from live.model import (
    ConnectionLost,
    FunctionCallRequest,
    LiveConnection,
    LiveModel,
    LiveSetup,
    ModelAudioOut,
    ModelEvent,
    ModelGoAway,
    ModelInterrupted,
    ModelResumptionUpdate,
    ModelSetupError,
    ModelTextOut,
    ModelToolCall,
    ModelToolCancellation,
    ModelTranscriptOut,
    ModelTurnComplete,
    ModelUsage,
    SendActivity,
    SendContent,
    SendRealtime,
    SendToolResponse,
)
from live.outbox import Outbox
from live.redact import redact, short_error
from live.requests import LiveRequest, LiveRequestQueue, RequestKind
from live.stop_streaming import STOP_STREAMING, StopStreamingTool
from live.streams import Emitter, StreamHandle, emission_message
from live.tool import Tool, ToolArgumentError, ToolContext, check_unique_names

log = logging.getLogger("lookout.session")

_SILENT = types.FunctionResponseScheduling.SILENT


class SessionError(Exception):
    """The session could not start (no connection, setup refused)."""


class _GaveUp(Exception):
    pass


@dataclass
class SessionStats:
    frames_in: int = 0
    frames_to_model: int = 0
    frames_model_lane_dropped: int = 0
    emissions: int = 0
    tool_calls: int = 0
    reconnects: int = 0
    events_dropped: int = 0
    usage_prompt_tokens: int = 0
    usage_response_tokens: int = 0
    usage_total_tokens: int = 0


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
    ) -> None:
        check_unique_names(tools)
        if STOP_STREAMING in (tool.name for tool in tools):
            raise ValueError("stop_streaming is built in; do not list it")
        self.model = model
        self.tools = list(tools)
        self.config = config or SessionConfig()
        self.clock = clock or MonotonicClock()
        self.event_log = event_log

    @contextlib.asynccontextmanager
    async def run_live(self, queue: LiveRequestQueue) -> AsyncIterator[LiveSession]:
        session = LiveSession(self, queue)
        conn = await session._connect_initial()
        async with anyio.create_task_group() as tg:
            # The session's own tasks live in a nested group so that ending the session
            # (queue closed, model gone) never cancels the caller's code in this block.
            await tg.start(session._run, conn)
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
        self.stats = SessionStats()
        self.started_at = self.clock.now()
        self.connection_state = "connecting"
        self.resumption_handle: str | None = None
        self.failure: str | None = None
        self._tools: dict[str, Tool] = {tool.name: tool for tool in runner.tools}
        if any(tool.is_streaming for tool in runner.tools):
            stop_tool = StopStreamingTool(self._stop_for_model)
            self._tools[stop_tool.name] = stop_tool
        self._streams: dict[str, StreamHandle] = {}
        self._regular_calls: dict[str, anyio.CancelScope] = {}
        self._outbox = Outbox(self.config.outbox_max)
        self._conn: LiveConnection | None = None
        self._conn_ready = anyio.Event()
        self._recv_scope: anyio.CancelScope | None = None
        self._send_failure: ConnectionLost | None = None
        self._model_frame: LiveRequest | None = None
        self._model_frame_ready = anyio.Event()
        self._closing = False
        self._finished = anyio.Event()
        self._tg: TaskGroup | None = None
        self._emission_seq = itertools.count(1)
        self._events_send: MemoryObjectSendStream[Event]
        self._events_recv: MemoryObjectReceiveStream[Event]
        self._events_send, self._events_recv = anyio.create_memory_object_stream[Event](4096)
        self._local_ids = itertools.count(1)
        self._streams_changed = anyio.Event()
        self._pumped_seq = 0
        self._input_calls_started = 0
        self._events_on_conn = 0
        self._last_attempt = 1
        self._pumped = anyio.Event()

    # ----------------------------------------------------------------- public

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events_recv.__aiter__()

    @property
    def events(self) -> MemoryObjectReceiveStream[Event]:
        return self._events_recv

    def declarations(self) -> list[types.FunctionDeclaration]:
        declarations = [tool.declaration() for tool in self._tools.values()]
        if self.config.emit_mode is EmitMode.TEXT:
            # Models with synchronous calls only reject NON_BLOCKING declarations.
            declarations = [d.model_copy(update={"behavior": None}) for d in declarations]
        return declarations

    def running_streams(self) -> list[dict[str, Any]]:
        now = self.clock.now()
        return [handle.info(now) for handle in self._streams.values()]

    def input_streams(self) -> dict[str, InputStream]:
        return {cid: h.input for cid, h in self._streams.items() if h.input is not None}

    @property
    def outbox_depth(self) -> int:
        return len(self._outbox)

    def publish(self, event: Event) -> None:
        """Report an event of the caller's own (source state, counts) through the session.

        It is stamped with the session's time, written to the event log and delivered
        to the event stream in order with the session's own events.
        """
        self._emit(event)

    async def stop_streaming(
        self, function_name: str | None = None, call_id: str | None = None
    ) -> dict[str, Any]:
        """Stop streams by name and/or call id (the same path the model's stop uses)."""
        return await self._stop_matching(function_name, call_id, reason="stop_streaming")

    async def call_tool(self, name: str, args: Mapping[str, Any] | None = None) -> str:
        """Start a tool call locally (status page, CLI); answers go to the model as usual."""
        call_id = f"local-{next(self._local_ids)}"
        await self._dispatch_call(FunctionCallRequest(call_id, name, dict(args or {})))
        return call_id

    async def wait_finished(self) -> None:
        await self._finished.wait()

    async def wait_input_consumer(self) -> None:
        """Wait until an input-consuming call has started (it may have ended since)."""
        while not self._input_calls_started and not self._closing:
            await self._streams_changed.wait()

    async def wait_inputs_idle(self) -> None:
        """Wait until every input-consuming call has processed what was queued so far."""
        target = self.queue.last_seq
        while self._pumped_seq < target and not self._closing:
            await self._pumped.wait()
        for stream in list(self.input_streams().values()):
            await stream.wait_idle()

    # -------------------------------------------------------------- lifecycle

    async def _connect_initial(self) -> LiveConnection:
        self._emit(ConnectionState(state="connecting"))
        try:
            return await self._connect_with_retry(initial=True)
        except _GaveUp as exc:
            self.failure = str(exc)
            self._emit(ConnectionState(state="failed", reason=str(exc)))
            raise SessionError(str(exc)) from None

    async def _run(
        self, conn: LiveConnection, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._connection_loop, conn)
            tg.start_soon(self._sender)
            tg.start_soon(self._pump_queue)
            if self.config.frames_to_model:
                tg.start_soon(self._forward_frames)
            task_status.started()

    def _cancel_tasks(self) -> None:
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _teardown(self) -> None:
        if self._closing:
            await self._finished.wait()
            return
        self._closing = True
        self._streams_changed.set()
        self._pumped.set()
        with anyio.CancelScope(shield=True):
            await self._stop_all("session closed")
            # Give answers already queued a moment to reach a live connection.
            if self._conn is not None:
                with anyio.move_on_after(self.config.flush_timeout_s):
                    await self._outbox.wait_drained()
            conn = self._conn
            self._clear_conn()
            if self._recv_scope is not None:
                self._recv_scope.cancel()
            if conn is not None:
                with anyio.move_on_after(2.0):
                    await conn.close()
            self.connection_state = "closed"
            self._emit(ConnectionState(state="closed"))
            self._finished.set()
            self._events_send.close()

    async def _pump_queue(self) -> None:
        async for request in self.queue:
            self._handle_request(request)
            self._pumped_seq = max(self._pumped_seq, request.seq)
            self._pumped.set()
            self._pumped = anyio.Event()
        # The queue was closed: end the session the same way leaving the block does.
        await self._teardown()
        self._cancel_tasks()

    def _handle_request(self, request: LiveRequest) -> None:
        if request.kind is RequestKind.REALTIME:
            self.stats.frames_in += 1
            for handle in self._streams.values():
                stream = handle.input
                if stream is not None and request.seq > stream.after_seq:
                    stream.offer(request)
            if self.config.frames_to_model and request.blob is not None:
                if self._model_frame is not None:
                    self.stats.frames_model_lane_dropped += 1
                self._model_frame = request
                self._model_frame_ready.set()
        elif request.kind is RequestKind.CONTENT and request.content is not None:
            self._outbox.post(SendContent(request.content, request.turn_complete))
        elif request.kind is RequestKind.ACTIVITY_START:
            self._outbox.post(SendActivity(start=True))
        elif request.kind is RequestKind.ACTIVITY_END:
            self._outbox.post(SendActivity(start=False))

    async def _forward_frames(self) -> None:
        """Model lane: newest frame only, at most one per interval, never queued."""
        last_sent: float | None = None
        interval = self.config.model_frame_interval_s
        while True:
            while self._model_frame is None:
                self._model_frame_ready = anyio.Event()
                await self._model_frame_ready.wait()
            if last_sent is not None:
                await self.clock.sleep(last_sent + interval - self.clock.now())
            request, self._model_frame = self._model_frame, None
            if request is None or request.blob is None:
                continue
            if self._conn is None:
                self.stats.frames_model_lane_dropped += 1
                continue
            self._outbox.post(SendRealtime(request.blob))
            self.stats.frames_to_model += 1
            last_sent = self.clock.now()

    # ------------------------------------------------------------- connection

    def _setup(self) -> LiveSetup:
        return LiveSetup(
            tools=tuple(self.declarations()),
            system_instruction=self.config.system_instruction,
            resumption_handle=self.resumption_handle,
        )

    async def _connect_with_retry(self, *, initial: bool, first_attempt: int = 1) -> LiveConnection:
        policy = self.config.reconnect
        last_error = "no attempt made"
        if first_attempt > policy.max_attempts:
            raise _GaveUp(
                f"the model keeps dropping the connection right after setup "
                f"({policy.max_attempts} times in a row)"
            )
        retry_now = False
        for attempt in range(first_attempt, policy.max_attempts + 1):
            delay = 0.0 if retry_now else policy.backoff(attempt)
            retry_now = False
            if delay > 0:
                await self.clock.sleep(delay)
            if not initial:
                self.connection_state = "reconnecting"
                self._emit(ConnectionState(state="reconnecting", attempt=attempt))
            try:
                with anyio.fail_after(policy.connect_timeout_s):
                    conn = await self.runner.model.connect(self._setup())
            except TimeoutError:
                last_error = f"no answer to setup within {policy.connect_timeout_s:g} s"
            except ModelSetupError as exc:
                if self.resumption_handle is not None:
                    # An expired or foreign handle is refused like a bad setup; a fresh
                    # session may still work.
                    last_error = self._redact(f"resuming was refused: {exc}")
                    self.resumption_handle = None
                    log.warning("%s; starting a fresh session", last_error)
                    retry_now = True  # not a network problem: no reason to wait
                    continue
                raise _GaveUp(self._redact(f"model refused the session: {exc}")) from None
            except ConnectionLost as exc:
                last_error = self._redact(exc.reason)
                if not exc.retryable:
                    raise _GaveUp(last_error) from None
            except OSError as exc:
                last_error = short_error(exc, self.config.secrets)
            else:
                self.connection_state = "connected"
                self._events_on_conn = 0
                self._last_attempt = attempt
                if not initial:
                    self.stats.reconnects += 1
                self._emit(ConnectionState(state="connected", attempt=attempt))
                return conn
            log.warning("model connection attempt %d failed: %s", attempt, last_error)
        raise _GaveUp(
            f"could not connect to the model after {policy.max_attempts} attempts: {last_error}"
        )

    async def _connection_loop(self, conn: LiveConnection) -> None:
        while True:
            self._send_failure = None
            self._set_conn(conn)
            lost: ConnectionLost | None = None
            with anyio.CancelScope() as scope:
                self._recv_scope = scope
                try:
                    async with contextlib.aclosing(conn.receive()) as events:  # type: ignore[type-var]
                        async for event in events:
                            self._events_on_conn += 1
                            if isinstance(event, ModelGoAway):
                                self._emit(
                                    ConnectionState(
                                        state="go_away",
                                        reason=f"time left {event.time_left_s}",
                                    )
                                )
                                lost = ConnectionLost("server sent GoAway")
                                break
                            self._on_model_event(event)
                        else:
                            lost = ConnectionLost("the model closed the connection")
                except ConnectionLost as exc:
                    lost = exc
            if scope.cancelled_caught:
                lost = self._send_failure or ConnectionLost("send failed")
            self._recv_scope = None
            self._clear_conn()
            with anyio.CancelScope(shield=True), anyio.move_on_after(2.0):
                await conn.close()
            if self._closing:
                return
            assert lost is not None
            self.connection_state = "disconnected"
            self._emit(
                ConnectionState(
                    state="disconnected", code=lost.code, reason=self._redact(lost.reason)
                )
            )
            dropped = self._outbox.drop_frames()
            if dropped:
                self.stats.frames_model_lane_dropped += dropped
            if not lost.retryable:
                await self._fail(f"model connection lost: {self._redact(lost.reason)}")
                return
            # A server that accepts setup and drops us before saying anything must not
            # make us spin: such a connection carries its attempt count (and backoff) on.
            first_attempt = 1 if self._events_on_conn else self._last_attempt + 1
            resuming = self.resumption_handle is not None
            try:
                conn = await self._connect_with_retry(initial=False, first_attempt=first_attempt)
            except _GaveUp as exc:
                await self._fail(str(exc))
                return
            if not (resuming and self.resumption_handle is not None):
                self._restart_fresh()

    def _restart_fresh(self) -> None:
        """The model came back as a new session: it never issued our running call ids.

        Answers for those calls would be refused or misread, so the streams end
        (without a final answer) and their queued emissions are dropped; the event
        log keeps every one, and the new session calls the tools it wants again.
        """
        ids = set(self._streams)
        dropped = self._outbox.drop_responses(ids)
        if ids or dropped:
            log.warning(
                "the model started a fresh session; stopping %d stream(s), dropping %d "
                "queued answer(s) for the old session",
                len(ids),
                dropped,
            )
        handles = list(self._streams.values())
        if handles:
            self._spawn(
                functools.partial(self._stop_handles, send_final=False),
                handles,
                "model session restarted",
            )

    def _set_conn(self, conn: LiveConnection) -> None:
        self._conn = conn
        self._conn_ready.set()

    def _clear_conn(self) -> None:
        self._conn = None
        if self._conn_ready.is_set():
            self._conn_ready = anyio.Event()

    async def _fail(self, reason: str) -> None:
        self.failure = reason
        self.connection_state = "failed"
        self._emit(ConnectionState(state="failed", reason=reason))
        self._emit(ErrorEvent(message=reason, where="model"))
        log.error("%s", reason)
        # Ending the queue ends the session cleanly, the same way a caller would.
        self.queue.close()

    async def _sender(self) -> None:
        while True:
            await self._outbox.wait_nonempty()
            while self._conn is None:
                await self._conn_ready.wait()
            conn = self._conn
            message = self._outbox.pop()
            if message is None:
                continue
            try:
                await conn.send(message)
            except ConnectionLost as exc:
                self._outbox.push_front(message)
                if conn is self._conn:
                    self._send_failure = exc
                    self._clear_conn()
                    if self._recv_scope is not None:
                        self._recv_scope.cancel()
                continue
            except Exception as exc:
                # A message the connection cannot encode is a bug to report, not a reason
                # to retry it forever and block everything behind it.
                self._emit(ErrorEvent(message=short_error(exc, self.config.secrets), where="send"))
                log.exception("dropping a message the model connection refused")
                self._outbox.mark_dropped()
                continue
            self._outbox.mark_sent()

    # ----------------------------------------------------------- model events

    def _on_model_event(self, event: ModelEvent) -> None:
        if isinstance(event, ModelToolCall):
            for call in event.calls:
                self._spawn(self._dispatch_call, call)
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
        elif isinstance(event, ModelResumptionUpdate):
            if event.resumable and event.handle:
                self.resumption_handle = event.handle
        elif isinstance(event, ModelUsage):
            self.stats.usage_prompt_tokens += event.prompt_tokens
            self.stats.usage_response_tokens += event.response_tokens
            self.stats.usage_total_tokens += event.total_tokens
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

    # ------------------------------------------------------------ tool calls

    def _respond(self, call_id: str, name: str, response: dict[str, Any], **kw: Any) -> None:
        self._outbox.post(
            SendToolResponse(
                (types.FunctionResponse(id=call_id, name=name, response=response, **kw),)
            )
        )
        self._emit(ToolResult(id=call_id, name=name, response=response))

    def _respond_error(self, call_id: str, name: str, message: str) -> None:
        self._respond(call_id, name, {"status": "error", "error": self._redact(message)})

    async def _dispatch_call(self, call: FunctionCallRequest) -> None:
        self.stats.tool_calls += 1
        args = call.args if isinstance(call.args, dict) else {}
        self._emit(ToolCall(id=call.id, name=call.name, args=args))
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            message = f"Unknown tool '{call.name}'. Available tools: {available}"
            self._emit(ErrorEvent(message=message, where="tool_call", id=call.id))
            self._respond_error(call.id, call.name, message)
            return
        if call.id in self._streams or call.id in self._regular_calls:
            message = f"call id {call.id} is already running"
            self._emit(ErrorEvent(message=message, where="tool_call", id=call.id))
            self._respond_error(call.id, call.name, message)
            return
        try:
            checked = tool.validate(args)
        except ToolArgumentError as exc:
            self._emit(ErrorEvent(message=str(exc), where="tool_call", id=call.id))
            self._respond_error(call.id, call.name, str(exc))
            return
        if tool.is_streaming:
            self._start_stream(tool, call.id, checked)
        else:
            await self._run_regular(tool, call.id, checked)

    def _context(self, tool: Tool, call_id: str, stream: InputStream | None) -> ToolContext:
        return ToolContext(
            call_id=call_id,
            function_name=tool.name,
            clock=self.clock,
            input_stream=stream,
            logger=logging.getLogger(f"lookout.tool.{tool.name}"),
            publish=self._publish,
        )

    async def _run_regular(self, tool: Tool, call_id: str, args: dict[str, Any]) -> None:
        job_id: str | None = None
        context = self._context(tool, call_id, None)
        if tool.is_long_running:
            # A ticket now, the result later with the same call id (declared NON_BLOCKING).
            job_id = f"job-{uuid.uuid4().hex[:10]}"
            context.job_id = job_id
            context.progress = self._job_progress(call_id, job_id, tool.name)
            self._respond(
                call_id,
                tool.name,
                {"job_id": job_id, "status": "started"},
                will_continue=True,
                scheduling=_SILENT,
            )
            self._emit(JobUpdate(id=call_id, job_id=job_id, name=tool.name, state="running"))
        with anyio.CancelScope() as scope:
            self._regular_calls[call_id] = scope
            try:
                result = await tool.call(args, context)
            except Exception as exc:
                message = short_error(exc, self.config.secrets)
                log.error("tool %s (call %s) failed: %s", tool.name, call_id, message)
                self._emit(ErrorEvent(message=message, where=tool.name, id=call_id))
                if job_id is not None:
                    self._emit(
                        JobUpdate(
                            id=call_id, job_id=job_id, name=tool.name, state="failed", error=message
                        )
                    )
                self._respond_error(call_id, tool.name, message)
                return
            finally:
                self._regular_calls.pop(call_id, None)
            response = result if isinstance(result, dict) else {"result": result}
            if job_id is not None:
                self._emit(
                    JobUpdate(
                        id=call_id,
                        job_id=job_id,
                        name=tool.name,
                        state="succeeded",
                        result=response,
                    )
                )
                response = {**response, "job_id": job_id, "status": "succeeded"}
            self._respond(call_id, tool.name, response)
        if scope.cancelled_caught and job_id is not None:
            self._emit(
                JobUpdate(
                    id=call_id, job_id=job_id, name=tool.name, state="cancelled", error="cancelled"
                )
            )

    def _job_progress(
        self, call_id: str, job_id: str, name: str, interval_s: float = 0.5
    ) -> Callable[[float | None, str], None]:
        """Progress of a job for people (events, log, sinks); the model never gets it."""
        throttle = ProgressThrottle(self.clock.now, interval_s)

        def progress(fraction: float | None, message: str) -> None:
            if not throttle.due(fraction):
                return
            self._emit(
                JobProgress(
                    id=call_id, job_id=job_id, name=name, fraction=fraction, message=message
                )
            )

        return progress

    def _start_stream(self, tool: Tool, call_id: str, args: dict[str, Any]) -> None:
        if not self.config.allow_concurrent_calls:
            running = [h.call_id for h in self._streams.values() if h.name == tool.name]
            if running:
                message = (
                    f"{tool.name} is already running (call id {running[0]}); "
                    f"call stop_streaming first"
                )
                self._emit(ErrorEvent(message=message, where="tool_call", id=call_id))
                self._respond_error(call_id, tool.name, message)
                return
        stream: InputStream | None = None
        if tool.consumes_input:
            # Frames queued before the call started are not this call's input.
            stream = InputStream(
                maxsize=self.config.tool_input_maxsize,
                accept=self.config.tool_input_accept,
                after_seq=self.queue.last_seq,
            )
        handle = StreamHandle(
            call_id=call_id,
            name=tool.name,
            args=args,
            tool=tool,
            started_at=self.clock.now(),
            input=stream,
        )
        self._streams[call_id] = handle
        if stream is not None:
            self._input_calls_started += 1
        self._streams_changed.set()
        self._streams_changed = anyio.Event()
        # Answer at once so the model is never left waiting on a streaming call.
        if self.config.emit_mode is EmitMode.FUNCTION_RESPONSE:
            self._respond(
                call_id,
                tool.name,
                {"status": PENDING_STATUS},
                will_continue=True,
                scheduling=_SILENT,
            )
        else:
            self._respond(call_id, tool.name, {"status": PENDING_STATUS})
        self._emit(StreamStarted(id=call_id, name=tool.name, args=args))
        self._spawn(self._run_stream, handle)

    def _deliver(
        self,
        handle: StreamHandle,
        payload: dict[str, Any],
        *,
        final: bool,
        scheduling: types.FunctionResponseScheduling | None = None,
    ) -> None:
        self._outbox.post(
            emission_message(
                self.config.emit_mode,
                handle.call_id,
                handle.name,
                payload,
                will_continue=not final,
                scheduling=scheduling or self.config.scheduling,
            )
        )
        if not final:
            handle.emissions += 1
        self.stats.emissions += 1
        self._emit(
            Emission(
                id=handle.call_id,
                name=handle.name,
                payload=payload,
                seq=next(self._emission_seq),
                final=final,
            )
        )

    def _deliver_bounded(self, handle: StreamHandle, payload: dict[str, Any]) -> None:
        self._deliver(handle, payload, final=False)
        bounds = self.config.stream_bounds
        budget = self.config.session_emission_budget
        if bounds.max_emissions is not None and handle.emissions >= bounds.max_emissions:
            self._end_stream(handle, f"max_emissions ({bounds.max_emissions}) reached")
        elif budget is not None and self.stats.emissions >= budget:
            self._end_stream(handle, f"session emission budget ({budget}) exhausted")

    def _end_stream(self, handle: StreamHandle, reason: str) -> None:
        if handle.stop_reason is None:
            handle.stop_reason = reason
            # A value held back by the min-interval goes out now, before whatever
            # answers the stop; after this the stream may not emit again.
            if handle.emitter is not None:
                handle.emitter.flush()
        if handle.scope is not None:
            handle.scope.cancel()

    async def _watch_lifetime(self, handle: StreamHandle, lifetime: float) -> None:
        await self.clock.sleep(lifetime)
        self._end_stream(handle, f"max_lifetime ({lifetime:g} s) reached")

    async def _run_stream(self, handle: StreamHandle) -> None:
        outcome: dict[str, Any] | None = None
        bounds = self.config.stream_bounds
        emitter = Emitter(
            lambda payload: self._deliver_bounded(handle, payload),
            min_interval_s=bounds.min_interval_s,
            clock=self.clock,
        )
        handle.emitter = emitter
        ctx = self._context(handle.tool, handle.call_id, handle.input)
        try:
            async with anyio.create_task_group() as tg:
                handle.scope = tg.cancel_scope
                if handle.stop_reason is not None:
                    tg.cancel_scope.cancel()
                tg.start_soon(emitter.run_trailing)
                if bounds.max_lifetime_s is not None:
                    tg.start_soon(self._watch_lifetime, handle, bounds.max_lifetime_s)
                outcome = await self._consume(handle, ctx, emitter)
                tg.cancel_scope.cancel()
        finally:
            if handle.input is not None:
                handle.input.close()
            self._streams.pop(handle.call_id, None)
            self._finish_stream(handle, emitter, outcome)
            handle.done.set()

    def _finish_stream(
        self, handle: StreamHandle, emitter: Emitter, outcome: dict[str, Any] | None
    ) -> None:
        # The last value a throttled stream produced is always delivered.
        emitter.flush()
        if handle.stop_reason is not None:
            reason = handle.stop_reason
            final: dict[str, Any] | None = {"status": "stopped", "reason": reason}
        elif outcome is not None and outcome.get("status") == "error":
            reason = "error"
            final = outcome
        else:
            reason = "finished"
            final = {"status": "finished"}
        if final is not None and handle.send_final and not self._closing:
            silent = final["status"] != "error"
            self._deliver(handle, final, final=True, scheduling=_SILENT if silent else None)
        stats = handle.input.stats if handle.input is not None else None
        self._emit(
            StreamStopped(
                id=handle.call_id,
                name=handle.name,
                reason=reason,
                emissions=handle.emissions,
                frames_received=stats.received if stats else 0,
                frames_dropped=stats.dropped if stats else 0,
            )
        )

    async def _consume(
        self, handle: StreamHandle, ctx: ToolContext, emitter: Emitter
    ) -> dict[str, Any] | None:
        iterator: AsyncIterator[dict[str, Any]] | None = None
        try:
            iterator = handle.tool.stream(handle.args, ctx)
            async for item in iterator:
                if handle.stop_reason is not None:
                    # Stopped while the tool was busy (it ignored cancellation for a
                    # while): what it yields now must not follow the stop answer.
                    break
                if not isinstance(item, Mapping):
                    raise TypeError(f"a streaming tool must yield dicts, got {type(item).__name__}")
                emitter.offer(dict(item))
                if handle.stop_reason is not None:
                    break
            return None
        except Exception as exc:
            message = short_error(exc, self.config.secrets)
            log.error(
                "streaming tool %s (call %s) failed: %s", handle.name, handle.call_id, message
            )
            self._emit(ErrorEvent(message=message, where=handle.name, id=handle.call_id))
            return {"status": "error", "error": message}
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                # Cleanup gets its own short budget, even when we are being cancelled.
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(self.config.stop_timeout_s),
                    contextlib.suppress(Exception),
                ):
                    await aclose()

    # ----------------------------------------------------------------- stops

    async def _stop_handles(
        self, handles: list[StreamHandle], reason: str, *, send_final: bool = True
    ) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        for handle in handles:
            handle.send_final = send_final
            self._end_stream(handle, reason)
        for handle in handles:
            finished = False
            with anyio.move_on_after(self.config.stop_timeout_s):
                await handle.done.wait()
                finished = True
            entry: dict[str, Any] = {"id": handle.call_id, "emissions": handle.emissions}
            if not finished:
                # The answer goes out now; a late final emission would contradict it.
                handle.send_final = False
                entry["cleanup"] = f"still running after {self.config.stop_timeout_s:g} s"
                self._emit(
                    ErrorEvent(
                        message=f"{handle.name} (call {handle.call_id}) did not stop within "
                        f"{self.config.stop_timeout_s:g} s",
                        where="stop",
                        id=handle.call_id,
                    )
                )
            results.append(entry)
        return results

    async def _stop_matching(
        self, function_name: str | None, call_id: str | None, *, reason: str
    ) -> dict[str, Any]:
        handles = [
            h
            for h in self._streams.values()
            if (function_name is None or h.name == function_name)
            and (call_id is None or h.call_id == call_id)
        ]
        label = function_name or call_id or ""
        if len(label) > 100:  # whatever the model sent, do not echo a novel back
            label = label[:97] + "..."
        if not handles:
            running = [{"name": h.name, "id": h.call_id} for h in self._streams.values()]
            what = f"named {label}" if function_name else f"with call id {label}"
            if function_name and call_id:
                what = f"named {label} with call id {call_id[:100]}"
            return {"status": f"No active streaming function {what}", "running": running}
        stopped = await self._stop_handles(handles, reason)
        name = function_name or handles[0].name
        return {"status": f"Successfully stopped streaming function {name}", "stopped": stopped}

    async def _stop_for_model(
        self, function_name: str | None, call_id: str | None
    ) -> dict[str, Any]:
        return await self._stop_matching(function_name, call_id, reason="stop_streaming")

    async def _cancel_calls(self, ids: Sequence[str]) -> None:
        for call_id in ids:
            scope = self._regular_calls.get(call_id)
            if scope is not None:
                scope.cancel()
        handles = [self._streams[i] for i in ids if i in self._streams]
        if handles:
            await self._stop_handles(handles, "cancelled by model", send_final=False)

    async def _stop_all(self, reason: str) -> None:
        for scope in list(self._regular_calls.values()):
            scope.cancel()
        handles = list(self._streams.values())
        if handles:
            await self._stop_handles(handles, reason, send_final=False)

    # ---------------------------------------------------------------- events

    def _redact(self, text: str) -> str:
        return redact(text, self.config.secrets)

    def _publish(self, event: Event) -> None:
        self._emit(event)

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
            self.stats.events_dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


__all__ = ["LiveSession", "Runner", "SessionError", "SessionStats"]
