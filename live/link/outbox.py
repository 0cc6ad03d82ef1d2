"""Messages on their way to the model, kept while it is away.

A message leaves the outbox only once the connection accepted it, so nothing
is lost across a disconnect. Emissions of a stream are kept in their logical
form (call id, payload) until they are sent, which lets the outbox merge them:
while the model cannot take a stream's emissions (disconnected, or slower than
the stream), a new emission replaces the one still waiting, through the tool's
``coalesce`` rule. On its return the model is told each stream's current state
once, with what changed while it was away, not a replay of every change (the
event log has every one). Camera frames are never kept for later: a picture
from before an outage is worth nothing. An image a call showed the model
(``SendRealtime.call_id``, ``ToolContext.show``) is part of that call's answer:
it stays with it (kept across an outage, dropped with the call's answers for a
model session that is gone) and is never dropped for room.

What the device posts on its own (text, activity markers, frames) is bounded
(``SessionConfig.outbox_max``): past the bound the oldest of it goes, counted
(``stats.dropped``) and handed to ``on_drop``, which says it. Answers and
emissions are never dropped for room: there is one per call (a stream's
emissions merge into one), so the model's own calls bound them.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from live import wire
from live.config import EmitMode
from live.model import Outbound, SendActivity, SendContent, SendRealtime, SendToolResponse
from live.util.signal import Wakeup

Coalesce = Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class OutEmission:
    """One emission of a stream, before it is put into its wire form."""

    call_id: str
    name: str
    payload: dict[str, Any]
    final: bool
    scheduling: wire.Scheduling


def render_emission(mode: EmitMode, emission: OutEmission) -> Outbound:
    """The wire form of one emission for its call id, in the session's mode.

    Text mode never completes the turn: an emission must not force the model
    to answer, only inform its next answer.
    """
    if mode is EmitMode.TEXT:
        text = f"Function {emission.name} returned: {json.dumps(emission.payload, default=str)}"
        return SendContent(
            wire.Content(role="user", parts=[wire.Part(text=text)]), turn_complete=False
        )
    return SendToolResponse(
        (
            wire.FunctionResponse(
                id=emission.call_id,
                name=emission.name,
                response=emission.payload,
                will_continue=not emission.final,
                scheduling=emission.scheduling,
            ),
        )
    )


@dataclass(frozen=True)
class OutItem:
    """What the sender takes: a message as it is, or an emission to render."""

    message: Outbound | None = None
    emission: OutEmission | None = None


@dataclass
class OutboxStats:
    posted: int = 0
    sent: int = 0
    coalesced: int = 0
    frames_dropped: int = 0
    dropped: int = 0  # messages pushed out past the bound
    max_depth: int = 0


def _unasked(item: OutItem) -> bool:
    """Posted by the device on its own (text, activity, a frame), not an answer to a call.

    Answers and emissions are one per call (a stream's emissions merge into one), so
    the model's calls bound them; what the device says on its own has no such bound.
    """
    message = item.message
    return message is not None and not isinstance(message, SendToolResponse) and not _shown(item)


def _shown(item: OutItem) -> bool:
    """An image a call showed the model: part of that call's answer."""
    return isinstance(item.message, SendRealtime) and item.message.call_id is not None


def describe(item: OutItem) -> str:
    """What a message the device posted is, in a word (for what says it was dropped)."""
    message = item.message
    if isinstance(message, SendContent):
        return "text"
    if isinstance(message, SendActivity):
        return "activity marker"
    if isinstance(message, SendRealtime):
        if message.call_id is not None:
            return "image"  # a call showed it (never dropped for room, but said honestly)
        return "audio chunk" if (message.blob.mime_type or "").startswith("audio/") else "frame"
    return type(message).__name__


class Outbox:
    def __init__(
        self,
        render: Callable[[OutEmission], Outbound],
        coalesce: Coalesce,
        *,
        max_items: int | None = None,
        on_drop: Callable[[OutItem], None] | None = None,
    ) -> None:
        if max_items is not None and max_items < 1:
            raise ValueError("max_items must be at least 1")
        self.stats = OutboxStats()
        self._render = render
        self._coalesce = coalesce
        self._max_items = max_items
        self._on_drop = on_drop
        self._items: deque[OutItem] = deque()
        self._wakeup = Wakeup()  # something was posted
        self._changed = Wakeup()  # something left, or the connection changed
        self._in_flight = 0

    def __len__(self) -> int:
        return len(self._items)

    # ---------------------------------------------------------------- posting

    def post(self, message: Outbound) -> None:
        self._append(OutItem(message=message))

    def post_emission(self, emission: OutEmission) -> None:
        if not emission.final:
            for index, item in enumerate(self._items):
                waiting = item.emission
                if (
                    waiting is not None
                    and waiting.call_id == emission.call_id
                    and not waiting.final
                ):
                    del self._items[index]
                    payload = self._coalesce(emission.name, waiting.payload, emission.payload)
                    emission = dataclasses.replace(emission, payload=payload)
                    self.stats.coalesced += 1
                    break
        self._append(OutItem(emission=emission))

    def _append(self, item: OutItem) -> None:
        self._items.append(item)
        self.stats.posted += 1
        if self._max_items is not None and _unasked(item):
            self._bound(self._max_items)
        self.stats.max_depth = max(self.stats.max_depth, len(self._items))
        self._wakeup.set()

    def _bound(self, most: int) -> None:
        """Past the bound, the oldest of what the model did not ask for goes."""
        unasked = [i for i, waiting in enumerate(self._items) if _unasked(waiting)]
        for index in reversed(unasked[: max(0, len(unasked) - most)]):
            dropped = self._items[index]
            del self._items[index]
            self.stats.dropped += 1
            if self._on_drop is not None:
                self._on_drop(dropped)

    def drop_frames(self) -> int:
        """Drop the camera frames waiting (the model is away); a call's image stays."""
        kept = deque(i for i in self._items if not isinstance(i.message, SendRealtime) or _shown(i))
        dropped = len(self._items) - len(kept)
        self._items = kept
        self.stats.frames_dropped += dropped
        return dropped

    def drop_calls(self, call_ids: set[str]) -> int:
        """Remove what waits for these call ids (they belong to a model session that is gone)."""

        def stale(item: OutItem) -> bool:
            if item.emission is not None:
                return item.emission.call_id in call_ids
            message = item.message
            if isinstance(message, SendRealtime):
                return message.call_id is not None and message.call_id in call_ids
            return isinstance(message, SendToolResponse) and all(
                r.id in call_ids for r in message.responses
            )

        kept = deque(i for i in self._items if not stale(i))
        dropped = len(self._items) - len(kept)
        self._items = kept
        return dropped

    # ---------------------------------------------------------------- sending

    def pop(self) -> OutItem | None:
        """Take the next item to send; follow with mark_sent(), mark_dropped() or push_front()."""
        if not self._items:
            return None
        self._in_flight += 1
        return self._items.popleft()

    def wire(self, item: OutItem) -> Outbound:
        if item.message is not None:
            return item.message
        assert item.emission is not None
        return self._render(item.emission)

    def push_front(self, item: OutItem) -> None:
        """Put back an item whose send failed, ahead of everything else."""
        self._in_flight -= 1
        self._items.appendleft(item)
        self.poke()

    def mark_sent(self) -> None:
        self._in_flight -= 1
        self.stats.sent += 1
        self._check_drained()

    def mark_dropped(self) -> None:
        self._in_flight -= 1
        self._check_drained()

    def _check_drained(self) -> None:
        self.poke()

    @property
    def empty(self) -> bool:
        """Nothing waiting and nothing being sent."""
        return not self._items and not self._in_flight

    def poke(self) -> None:
        """Wake ``wait_change`` (a message left, or the connection changed)."""
        self._changed.set()

    async def wait_change(self) -> None:
        await self._changed.wait()

    async def wait_drained(self) -> None:
        while not self.empty:
            await self._changed.wait()

    async def wait_nonempty(self) -> None:
        while not self._items:
            await self._wakeup.wait()

    def snapshot(self) -> list[OutItem]:
        return list(self._items)


__all__ = ["OutEmission", "OutItem", "Outbox", "OutboxStats", "describe", "render_emission"]
