"""Clocks: the runtime never reads time directly, so tests can drive it virtually.

Sleeps and time-outs both go through the clock: ``clock.move_on_after(s)`` and
``clock.fail_after(s)`` are anyio's on real time and deadlines on virtual
time, so a test of a tool that times out, or of a stop that waits for a
stubborn tool, advances the clock instead of waiting.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Iterator
from typing import Protocol

import anyio

Timeout = contextlib.AbstractContextManager[anyio.CancelScope]


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale (origin is arbitrary)."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def move_on_after(self, seconds: float | None) -> anyio.CancelScope:
        """A cancel scope that gives up after ``seconds`` on this clock (None: never)."""
        ...

    def fail_after(self, seconds: float | None) -> Timeout:
        """Like ``move_on_after``, but raises TimeoutError when the time ran out."""
        ...


class MonotonicClock:
    """Wall time from ``time.monotonic``; sleeping and time-outs are anyio's."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))

    def move_on_after(self, seconds: float | None) -> anyio.CancelScope:
        return anyio.move_on_after(seconds)

    def fail_after(self, seconds: float | None) -> Timeout:
        return anyio.fail_after(seconds)


async def settle(max_rounds: int = 100_000) -> None:
    """Return once every other task is blocked waiting on something.

    anyio's ``wait_all_tasks_blocked`` polls every 100 ms on asyncio, which makes
    a virtual-time test of 300 frames take half a minute; this yields to the
    loop just as often as needed.
    """
    try:
        import asyncio

        this = asyncio.current_task()
    except RuntimeError:
        this = None
    if this is None:
        await anyio.wait_all_tasks_blocked()
        return
    for _ in range(max_rounds):
        await asyncio.sleep(0)
        for task in asyncio.all_tasks():
            if task is this:
                continue
            waiter = getattr(task, "_fut_waiter", None)
            if waiter is None or waiter.done():
                break
        else:
            return
    raise RuntimeError("tasks did not settle")


class FakeClock:
    """Virtual time that only moves when a test calls :meth:`advance`.

    Sleepers wake in deadline order. Combined with ``anyio.wait_all_tasks_blocked``
    this lets a test step through seconds of behaviour without waiting for them.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, anyio.Event]] = []
        self._deadlines: list[tuple[float, int, anyio.CancelScope]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), event))
        await event.wait()

    def move_on_after(self, seconds: float | None) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        if seconds is None or math.isinf(seconds):
            return scope
        if seconds <= 0:
            scope.cancel()
        else:
            heapq.heappush(self._deadlines, (self._now + seconds, next(self._seq), scope))
        return scope

    @contextlib.contextmanager
    def fail_after(self, seconds: float | None) -> Iterator[anyio.CancelScope]:
        with self.move_on_after(seconds) as scope:
            yield scope
        if scope.cancelled_caught:
            raise TimeoutError

    def next_deadline(self) -> float | None:
        times = [entries[0][0] for entries in (self._sleepers, self._deadlines) if entries]
        return min(times) if times else None

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        self.set(self._now + seconds)

    def set(self, when: float) -> None:
        if when < self._now:
            raise ValueError("a clock cannot go backwards")
        self._now = when
        while self._sleepers and self._sleepers[0][0] <= when:
            _, _, event = heapq.heappop(self._sleepers)
            event.set()
        while self._deadlines and self._deadlines[0][0] <= when:
            _, _, scope = heapq.heappop(self._deadlines)
            scope.cancel()

    async def run_for(self, seconds: float, *, step: float | None = None) -> None:
        """Advance in steps, letting every task settle after each one.

        Without ``step`` it jumps from deadline to deadline, which is what an
        autojump clock does; with ``step`` it also stops at regular ticks.
        """
        end = self._now + seconds
        await settle()
        while True:
            target = end
            deadline = self.next_deadline()
            if deadline is not None and deadline < target:
                target = deadline
            if step is not None:
                target = min(target, self._now + step)
            self.set(target)
            await settle()
            if self._now >= end:
                break
