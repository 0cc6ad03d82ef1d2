"""Bounds on the status server's connections, so viewers can never take the device down.

aiohttp keeps a connection open for as long as the peer does and has no cap on
how many: a thousand idle sockets (no request ever sent) use up the process's
file descriptors, and then the camera cannot be reopened and the event log
cannot open its file. This wraps aiohttp's protocol factory:

- at most ``max_connections`` at once; past that a connection gets a short
  ``503`` and is closed at once (it costs a descriptor for microseconds);
- a connection that has not sent a whole request head within
  ``head_timeout_s`` is closed (slowloris, port scanners, idle sockets);
- the cap leaves a reserve of descriptors for everything else
  (``cap_for_limit``).

It is a protocol wrapper rather than a middleware because a middleware only
runs once a request has been read, which an idle socket never sends.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from live.signal import Wakeup

log = logging.getLogger("lookout.status")

BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 5\r\nConnection: close\r\nContent-Length: 37\r\n\r\n"
    b"too many connections; try again soon\n"
)
HEAD_END = b"\r\n\r\n"
MAX_HEAD_BYTES = 16 * 1024  # what we look through for the end of the head (aiohttp limits it too)
RESERVED_FDS = 128  # camera, event logs, MQTT, model connection, Python itself


def cap_for_limit(wanted: int, soft_limit: int | None = None) -> int:
    """``wanted``, or fewer so that connections never take the reserved descriptors."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit <= 0:
        return wanted
    return max(8, min(wanted, (soft_limit - RESERVED_FDS) // 2))


@dataclass
class GuardStats:
    open: int = 0
    refused: int = 0  # past the cap
    timed_out: int = 0  # no whole request head in time
    changed: Wakeup = field(default_factory=Wakeup, repr=False)


class ConnectionGuard:
    """A protocol factory for ``loop.create_server`` around aiohttp's ``web.Server``."""

    def __init__(
        self,
        inner: Callable[[], asyncio.Protocol],
        *,
        max_connections: int,
        head_timeout_s: float,
        stats: GuardStats | None = None,
    ) -> None:
        self.inner = inner
        self.max_connections = max_connections
        self.head_timeout_s = head_timeout_s
        self.stats = stats if stats is not None else GuardStats()
        self._said_full = False

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self)

    def _admit(self) -> bool:
        self.stats.changed.set()
        if self.stats.open >= self.max_connections:
            self.stats.refused += 1
            if not self._said_full:
                # Once per episode, not once per connection: a flood must not flood the log.
                self._said_full = True
                log.warning(
                    "status server: %d connections open, refusing more (503) until some close",
                    self.stats.open,
                )
            return False
        self.stats.open += 1
        return True

    def _release(self) -> None:
        self.stats.open -= 1
        self.stats.changed.set()
        if self._said_full and self.stats.open < self.max_connections * 3 // 4:
            self._said_full = False
            log.warning(
                "status server: connections back to %d; %d were refused meanwhile",
                self.stats.open,
                self.stats.refused,
            )


class _Guarded(asyncio.Protocol):
    def __init__(self, guard: ConnectionGuard) -> None:
        self.guard = guard
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self._head = b""
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.guard._admit():
            transport.write(BUSY)
            transport.close()
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.guard.head_timeout_s, self._too_slow)
        self.inner = self.guard.inner()
        self.inner.connection_made(transport)

    def _too_slow(self) -> None:
        self._timer = None
        self.guard.stats.timed_out += 1
        self.guard.stats.changed.set()
        if self.transport is not None:
            self.transport.abort()  # nothing was asked: nothing to answer

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        if self._timer is not None:
            # Only the end of the first head matters; keep-alive idling is aiohttp's own
            # keepalive_timeout.
            self._head = (self._head + data)[-MAX_HEAD_BYTES:]
            if HEAD_END in self._head:
                self._timer.cancel()
                self._timer = None
                self._head = b""
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.inner is None:
            return
        self.guard._release()
        inner, self.inner = self.inner, None
        inner.connection_lost(exc)

    def __getattr__(self, name: str) -> Any:
        # aiohttp's handler is reached through its transport, not through us; anything
        # else asked of the protocol goes to it.
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)


__all__ = ["ConnectionGuard", "GuardStats", "cap_for_limit"]
