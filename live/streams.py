"""Running streams: the registry entry of one streaming call and its emitter."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from google.genai import types

from live.clock import Clock
from live.config import EmitMode
from live.input_stream import InputStream
from live.model import Outbound, SendContent, SendToolResponse
from live.tool import Tool


@dataclass
class StreamHandle:
    """One running call of a streaming tool, keyed by its call id."""

    call_id: str
    name: str
    args: dict[str, Any]
    tool: Tool
    started_at: float
    input: InputStream | None = None
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
            "args": self.args,
            "running_s": round(now - self.started_at, 3),
            "emissions": self.emissions,
        }
        if self.input is not None:
            data["frames_received"] = self.input.stats.received
            data["frames_dropped"] = self.input.stats.dropped
        return data


def emission_message(
    mode: EmitMode,
    call_id: str,
    name: str,
    payload: dict[str, Any],
    *,
    will_continue: bool,
    scheduling: types.FunctionResponseScheduling,
) -> Outbound:
    """The wire form of one emission for a call id, in the session's mode.

    Text mode never completes the turn: an emission must not force the model
    to answer, only inform its next answer.
    """
    if mode is EmitMode.TEXT:
        text = f"Function {name} returned: {json.dumps(payload, default=str)}"
        return SendContent(
            types.Content(role="user", parts=[types.Part(text=text)]), turn_complete=False
        )
    return SendToolResponse(
        (
            types.FunctionResponse(
                id=call_id,
                name=name,
                response=payload,
                will_continue=will_continue,
                scheduling=scheduling,
            ),
        )
    )


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
        self._wakeup = anyio.Event()

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
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
            assert self._last_sent is not None
            await self._clock.sleep(self._last_sent + self._min_interval - self._clock.now())
            self.flush()
