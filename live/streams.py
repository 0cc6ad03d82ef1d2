"""Running streams: the registry of streaming calls, their bounds, emitters and stops.

Each call of a streaming tool is a ``StreamHandle`` keyed by its call id and
runs in the session's task group. The registry applies the bounds (lifetime,
emissions, min interval, session budget), turns an exception into a final
error emission, and stops calls by name or id, waiting for their cleanup
before it answers, so nothing is ever emitted after a stop was confirmed.
Where an emission goes (the model, or only the event log for a device call)
is the session's business: the registry hands each one to ``deliver``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from live import wire
from live.config import SessionConfig
from live.events import ErrorEvent, Event, StreamStarted, StreamStopped
from live.input_stream import InputStream
from live.tool import Tool, ToolContext
from live.util.clock import Clock
from live.util.redact import short_error
from live.util.signal import Wakeup

log = logging.getLogger("lookout.streams")

_SILENT = wire.Scheduling.SILENT

MODEL = "model"
DEVICE = "device"


@dataclass
class StreamHandle:
    """One running call of a streaming tool, keyed by its call id.

    ``by`` says who called it: the model (emissions go to the model) or the
    device (a page, the console; emissions are recorded only).
    """

    call_id: str
    name: str
    args: dict[str, Any]
    tool: Tool
    started_at: float
    by: str = MODEL
    input: InputStream[Any] | None = None
    scope: anyio.CancelScope | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    emissions: int = 0
    stop_reason: str | None = None
    send_final: bool = True
    emitter: Emitter | None = None

    def info(self, now: float) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.call_id,
            "name": self.name,
            "by": self.by,
            "args": self.args,
            "running_s": round(now - self.started_at, 3),
            "emissions": self.emissions,
        }
        if self.input is not None:
            data["frames_received"] = self.input.stats.received
            data["frames_dropped"] = self.input.stats.dropped
        return data


class Emitter:
    """Applies the min-interval bound to one stream's emissions.

    An emission inside the interval is held; a newer one replaces it; the held
    value goes out when the interval has passed (trailing edge), so the model
    always ends up with the latest value.
    """

    def __init__(
        self,
        deliver: Callable[[dict[str, Any]], None],
        *,
        min_interval_s: float,
        clock: Clock,
    ) -> None:
        self._deliver = deliver
        self._min_interval = min_interval_s
        self._clock = clock
        self._last_sent: float | None = None
        self._pending: dict[str, Any] | None = None
        self._wakeup = Wakeup()

    @property
    def pending(self) -> dict[str, Any] | None:
        return self._pending

    def offer(self, payload: dict[str, Any]) -> None:
        now = self._clock.now()
        if (
            self._min_interval <= 0
            or self._last_sent is None
            or now - self._last_sent >= self._min_interval
        ):
            self._pending = None
            self._send(payload, now)
        else:
            self._pending = payload
            self._wakeup.set()

    def _send(self, payload: dict[str, Any], now: float) -> None:
        self._last_sent = now
        self._deliver(payload)

    def flush(self) -> None:
        if self._pending is not None:
            payload, self._pending = self._pending, None
            self._send(payload, self._clock.now())

    async def run_trailing(self) -> None:
        """Deliver held values once their interval has passed; runs until cancelled."""
        if self._min_interval <= 0:
            await anyio.sleep_forever()
        while True:
            while self._pending is None:
                await self._wakeup.wait()
            assert self._last_sent is not None
            await self._clock.sleep(self._last_sent + self._min_interval - self._clock.now())
            self.flush()


Deliver = Callable[[StreamHandle, dict[str, Any], bool, "wire.Scheduling | None"], None]


class StreamRegistry:
    """The streaming calls of one session."""

    def __init__(
        self,
        config: SessionConfig,
        clock: Clock,
        *,
        deliver: Deliver,
        emit: Callable[[Event], None],
        context: Callable[[Tool, str, InputStream[Any] | None], ToolContext],
        emissions_so_far: Callable[[], int],
    ) -> None:
        self.config = config
        self.clock = clock
        self._deliver = deliver
        self._emit = emit
        self._context = context
        self._emissions_so_far = emissions_so_far
        self.handles: dict[str, StreamHandle] = {}
        self.input_calls_started = 0
        self.closing = False
        self._changed = Wakeup()

    # ------------------------------------------------------------------ state

    def info(self) -> list[dict[str, Any]]:
        now = self.clock.now()
        return [handle.info(now) for handle in self.handles.values()]

    def input_streams(self) -> dict[str, InputStream[Any]]:
        return {cid: h.input for cid, h in self.handles.items() if h.input is not None}

    def running(self, name: str) -> list[str]:
        return [h.call_id for h in self.handles.values() if h.name == name]

    async def wait_changed(self) -> None:
        await self._changed.wait()

    def notify(self) -> None:
        self._changed.set()

    # ---------------------------------------------------------------- running

    def start(
        self, tool: Tool, call_id: str, args: dict[str, Any], *, by: str, after_seq: int
    ) -> StreamHandle | str:
        """A new stream, or the reason it was refused."""
        cap = self.config.max_streams
        if cap is not None and len(self.handles) >= cap:
            return (
                f"{len(self.handles)} streams are running, the most this device runs at once; "
                "stop one with stop_streaming first"
            )
        if not self.config.allow_concurrent_calls:
            running = self.running(tool.name)
            if running:
                return (
                    f"{tool.name} is already running (call id {running[0]}); "
                    "call stop_streaming first"
                )
        stream: InputStream[Any] | None = None
        if tool.consumes_input:
            # Frames queued before the call started are not this call's input. A tool
            # may name what it listens to (``input_accept``, e.g. audio/*) and, from the
            # call's arguments, which of it (``input_filter``: one camera's).
            accept = getattr(tool, "input_accept", ()) or self.config.tool_input_accept
            wants = getattr(tool, "input_filter", None) or (lambda args: None)
            stream = InputStream.taking(
                accept, self.config.tool_input_maxsize, after_seq, wants(args)
            )
            self.input_calls_started += 1
        handle = StreamHandle(
            call_id=call_id,
            name=tool.name,
            args=args,
            tool=tool,
            started_at=self.clock.now(),
            by=by,
            input=stream,
        )
        self.handles[call_id] = handle
        self.notify()
        self._emit(StreamStarted(id=call_id, name=tool.name, args=args, by=by))
        return handle

    def _offer(self, handle: StreamHandle, payload: dict[str, Any]) -> None:
        self._deliver(handle, payload, False, None)
        handle.emissions += 1
        bounds = self.config.stream_bounds
        budget = self.config.session_emission_budget
        if bounds.max_emissions is not None and handle.emissions >= bounds.max_emissions:
            self._end(handle, f"max_emissions ({bounds.max_emissions}) reached")
        elif budget is not None and self._emissions_so_far() >= budget:
            self._end(handle, f"session emission budget ({budget}) exhausted")

    def _end(self, handle: StreamHandle, reason: str) -> None:
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
        self._end(handle, f"max_lifetime ({lifetime:g} s) reached")

    async def run(self, handle: StreamHandle) -> None:
        """The body of one stream, from the tool's first item to its final emission."""
        outcome: dict[str, Any] | None = None
        bounds = self.config.stream_bounds
        emitter = Emitter(
            lambda payload: self._offer(handle, payload),
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
            self.handles.pop(handle.call_id, None)
            self._finish(handle, emitter, outcome)
            handle.done.set()
            self.notify()

    def _finish(
        self, handle: StreamHandle, emitter: Emitter, outcome: dict[str, Any] | None
    ) -> None:
        # The last value a throttled stream produced is always delivered.
        emitter.flush()
        if handle.stop_reason is not None:
            reason = handle.stop_reason
            final: dict[str, Any] = {"status": "stopped", "reason": reason}
        elif outcome is not None and outcome.get("status") == "error":
            reason = "error"
            final = outcome
        else:
            reason = "finished"
            final = {"status": "finished"}
        if handle.send_final and not self.closing:
            silent = final["status"] != "error"
            self._deliver(handle, final, True, _SILENT if silent else None)
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
                    self.clock.move_on_after(self.config.stop_timeout_s),
                    contextlib.suppress(Exception),
                ):
                    await aclose()

    # ------------------------------------------------------------------ stops

    async def stop_handles(
        self, handles: list[StreamHandle], reason: str, *, send_final: bool = True
    ) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        for handle in handles:
            handle.send_final = send_final
            self._end(handle, reason)
        for handle in handles:
            finished = False
            with self.clock.move_on_after(self.config.stop_timeout_s):
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

    async def stop_matching(
        self, function_name: str | None, call_id: str | None, *, reason: str
    ) -> dict[str, Any]:
        handles = [
            h
            for h in self.handles.values()
            if (function_name is None or h.name == function_name)
            and (call_id is None or h.call_id == call_id)
        ]
        label = function_name or call_id or ""
        if len(label) > 100:  # whatever the model sent, do not echo a novel back
            label = label[:97] + "..."
        if not handles:
            running = [{"name": h.name, "id": h.call_id} for h in self.handles.values()]
            what = f"named {label}" if function_name else f"with call id {label}"
            if function_name and call_id:
                what = f"named {label} with call id {call_id[:100]}"
            return {"status": f"No active streaming function {what}", "running": running}
        stopped = await self.stop_handles(handles, reason)
        name = function_name or handles[0].name
        return {"status": f"Successfully stopped streaming function {name}", "stopped": stopped}

    async def stop_all(self, reason: str, *, by: str | None = None) -> None:
        handles = [h for h in self.handles.values() if by is None or h.by == by]
        if handles:
            await self.stop_handles(handles, reason, send_final=False)


__all__ = ["DEVICE", "MODEL", "Emitter", "StreamHandle", "StreamRegistry"]
