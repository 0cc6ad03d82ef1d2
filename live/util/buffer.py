"""``LatestWins``: the one bounded, drop-oldest buffer every live lane uses.

For live input a stale item is worth nothing and an unbounded backlog is how
latency grows without limit, so every lane that carries frames (the request
queue's realtime lane, each tool call's input stream, the model lane, a
camera's newest frame) keeps at most ``maxsize`` items: a new item pushes the
oldest out, and every item pushed out is counted.

anyio events are made on first wait, so a buffer may be built before the
event loop runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

from live.util.signal import Wakeup, take_when_ready

T = TypeVar("T")


@dataclass
class BufferStats:
    received: int = 0  # items put in
    dropped: int = 0  # items pushed out (or skipped over) before anyone took them
    delivered: int = 0  # items taken
    max_depth: int = 0


class LatestWins(Generic[T]):
    def __init__(self, maxsize: int = 1) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.stats = BufferStats()
        self._items: deque[T] = deque()
        self._latest: T | None = None
        self._closed = False
        self._wakeup = Wakeup()
        self._idle = Wakeup()
        self._waiting = False
        # Called with each item pushed out, for lanes that report what they lost.
        self.on_drop: Callable[[T], None] | None = None

    # ---------------------------------------------------------------- putting

    def put(self, item: T) -> None:
        """Add an item, pushing the oldest out when full; never blocks. Closed: ignored."""
        if self._closed:
            return
        self.stats.received += 1
        self._items.append(item)
        self._latest = item
        while len(self._items) > self.maxsize:
            dropped = self._items.popleft()
            self.stats.dropped += 1
            if self.on_drop is not None:
                self.on_drop(dropped)
        self.stats.max_depth = max(self.stats.max_depth, len(self._items))
        self._wakeup.set()

    def close(self) -> None:
        """No more items: waiters get what is left, then ``EndOfStream``."""
        self._closed = True
        self._wakeup.set()
        self._idle.set()

    def clear(self) -> int:
        """Drop everything waiting (counted); returns how many."""
        count = len(self._items)
        self._items.clear()
        self.stats.dropped += count
        return count

    # ---------------------------------------------------------------- taking

    def get_nowait(self) -> T | None:
        if not self._items:
            return None
        self.stats.delivered += 1
        return self._items.popleft()

    async def get(self) -> T:
        """The oldest waiting item; raises ``anyio.EndOfStream`` once closed and empty."""
        return await take_when_ready(
            self.get_nowait, lambda: self._closed, self._wakeup, waiting=self._set_waiting
        )

    def _set_waiting(self, waiting: bool) -> None:
        self._waiting = waiting
        if waiting:
            self._idle.set()

    async def newest(self) -> T:
        """Skip to the newest waiting item (the older ones count as dropped), waiting if none."""
        item = await self.get()
        while self._items:
            self.stats.dropped += 1
            item = self._items.popleft()
        return item

    def __aiter__(self) -> LatestWins[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.get()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    # ----------------------------------------------------------------- state

    @property
    def depth(self) -> int:
        return len(self._items)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def latest(self) -> T | None:
        """The newest item put in so far, taken or not."""
        return self._latest

    @property
    def idle(self) -> bool:
        """Nothing waiting and the taker asks for more (it has finished its work)."""
        return self._closed or (not self._items and self._waiting)

    async def wait_idle(self) -> None:
        """Wait until the taker has taken everything and waits for more.

        A file replayed "as fast as possible" uses this as back-pressure, so that
        every sampled frame is processed and a replay gives the same results at
        any pace.
        """
        while not self.idle:
            await self._idle.wait()


__all__ = ["BufferStats", "LatestWins"]
