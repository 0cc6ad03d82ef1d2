"""Messages on their way to the model, kept across disconnects.

A message leaves the outbox only once the connection accepted it, so
emissions made while the model is unreachable are delivered after the
reconnect, in order, exactly once. The outbox is bounded: when it overflows,
older intermediate emissions of a call are collapsed into the newest one
(a count that changed five times during an outage arrives as its latest
value), and stale camera frames are dropped; content is never dropped.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import anyio

from live.model import Outbound, SendRealtime, SendToolResponse


@dataclass
class OutboxStats:
    posted: int = 0
    sent: int = 0
    collapsed: int = 0
    frames_dropped: int = 0
    max_depth: int = 0


def _emission_call_id(message: Outbound) -> str | None:
    """Call id of an intermediate (will_continue) single response, else None."""
    if isinstance(message, SendToolResponse) and len(message.responses) == 1:
        response = message.responses[0]
        if response.will_continue and not _is_pending_answer(message):
            return response.id
    return None


def _is_pending_answer(message: SendToolResponse) -> bool:
    response = message.responses[0].response or {}
    return "status" in response and len(response) == 1 and "pending" in str(response["status"])


class Outbox:
    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = max(2, maxsize)
        self.stats = OutboxStats()
        self._items: deque[Outbound] = deque()
        self._wakeup = anyio.Event()
        self._in_flight = 0
        self._drained = anyio.Event()

    def __len__(self) -> int:
        return len(self._items)

    def post(self, message: Outbound) -> None:
        self._items.append(message)
        self.stats.posted += 1
        if len(self._items) > self.maxsize:
            self._shrink()
        self.stats.max_depth = max(self.stats.max_depth, len(self._items))
        self._wakeup.set()

    def _shrink(self) -> None:
        # Stale frames go first: nobody wants a picture from before the outage.
        for index, message in enumerate(self._items):
            if isinstance(message, SendRealtime):
                del self._items[index]
                self.stats.frames_dropped += 1
                return
        # Then an intermediate emission that a newer one of the same call supersedes.
        newest: dict[str, int] = {}
        for index, message in enumerate(self._items):
            call_id = _emission_call_id(message)
            if call_id is not None:
                newest[call_id] = index
        for index, message in enumerate(self._items):
            call_id = _emission_call_id(message)
            if call_id is not None and newest[call_id] != index:
                del self._items[index]
                self.stats.collapsed += 1
                return

    def drop_frames(self) -> int:
        kept: deque[Outbound] = deque(m for m in self._items if not isinstance(m, SendRealtime))
        dropped = len(self._items) - len(kept)
        self._items = kept
        self.stats.frames_dropped += dropped
        return dropped

    def drop_responses(self, call_ids: set[str]) -> int:
        """Remove queued tool responses for these call ids (a new model session)."""

        def stale(message: Outbound) -> bool:
            return isinstance(message, SendToolResponse) and all(
                r.id in call_ids for r in message.responses
            )

        kept: deque[Outbound] = deque(m for m in self._items if not stale(m))
        dropped = len(self._items) - len(kept)
        self._items = kept
        return dropped

    def pop(self) -> Outbound | None:
        """Take the next message to send; follow with mark_sent() or push_front()."""
        if not self._items:
            return None
        self._in_flight += 1
        return self._items.popleft()

    def push_front(self, message: Outbound) -> None:
        """Put back a message whose send failed, ahead of everything else."""
        self._in_flight -= 1
        self._items.appendleft(message)

    def mark_sent(self) -> None:
        self._in_flight -= 1
        self.stats.sent += 1
        if not self._items and not self._in_flight:
            self._drained.set()

    def mark_dropped(self) -> None:
        self._in_flight -= 1
        if not self._items and not self._in_flight:
            self._drained.set()

    async def wait_drained(self) -> None:
        while self._items or self._in_flight:
            if self._drained.is_set():
                self._drained = anyio.Event()
            await self._drained.wait()

    async def wait_nonempty(self) -> None:
        while not self._items:
            self._wakeup = anyio.Event()
            await self._wakeup.wait()

    def snapshot(self) -> list[Outbound]:
        return list(self._items)
