"""``Wakeup``: wake whoever is waiting now; the one primitive behind every "something changed".

anyio events are made on first wait (a buffer, a queue or an outbox may be
built before the event loop runs) and replaced after each set, so a wait that
begins later waits for the next change. Every waiter present at a ``set`` is
woken. ``take_when_ready`` is the loop every consumer of a buffer runs.

Not ``anyio.Condition``: its ``notify_all`` needs the lock held, and ``set`` is
called from plain functions (a buffer's ``put``, a callback from another part
of the session) that cannot take it; not a bare ``anyio.Event``, which is set
once for good: ``Wakeup`` is that event, renewed after each set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class Wakeup:
    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def set(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self) -> None:
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()


async def take_when_ready(
    take: Callable[[], T | None],
    closed: Callable[[], bool],
    wakeup: Wakeup,
    *,
    waiting: Callable[[bool], None] | None = None,
) -> T:
    """The next item ``take`` gives; ``anyio.EndOfStream`` once ``closed`` and empty.

    ``waiting(True/False)`` is told when the taker starts and stops waiting (a buffer
    uses it to know that its consumer is idle).
    """
    while True:
        item = take()
        if item is not None:
            return item
        if closed():
            raise anyio.EndOfStream
        if waiting is not None:
            waiting(True)
        try:
            await wakeup.wait()
        finally:
            if waiting is not None:
                waiting(False)


__all__ = ["Wakeup", "take_when_ready"]
