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
  (``cap_for_limit``);
- connections are accepted at a bounded rate (``serve``): past it they wait in
  the kernel's backlog, so a reader that reconnects as fast as it can (one
  connection per request, or refused and straight back) costs the event loop
  no more than the rate allows (``page/pacing.py`` says why that matters).

It is a protocol wrapper rather than a middleware because a middleware only
runs once a request has been read, which an idle socket never sends.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from device.outputs.page.rate import Pacer, PacingStats
from live.util.signal import Wakeup

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
PROBE_CONNECTIONS = 16  # past the cap, for /healthz only
HEALTH_PATH = "/healthz"


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
    paced: PacingStats = field(default_factory=PacingStats)  # requests that waited their turn
    changed: Wakeup = field(default_factory=Wakeup, repr=False)


class ConnectionGuard:
    """A protocol factory for ``loop.create_server`` around aiohttp's ``web.Server``.

    Past the cap a few more connections are let in for health probes only: a
    monitor must not read "503" (unhealthy) off a device that counts well while
    readers of its page hold every connection. Such a connection is read up to the
    end of its request head; a ``GET /healthz`` is answered (and the connection then
    closed), anything else gets the short ``503``."""

    def __init__(
        self,
        inner: Callable[[], asyncio.Protocol],
        *,
        max_connections: int,
        head_timeout_s: float,
        stats: GuardStats | None = None,
        probe_connections: int = PROBE_CONNECTIONS,
    ) -> None:
        self.inner = inner
        self.max_connections = max_connections
        self.head_timeout_s = head_timeout_s
        self.probe_connections = probe_connections
        self.stats = stats if stats is not None else GuardStats()
        self.probes_open = 0
        self.closing = False  # the server is shutting down: nothing more to say
        self._said_full = False

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self)

    @property
    def full(self) -> bool:
        return self.stats.open >= self.max_connections

    def _admit(self) -> bool:
        self.stats.changed.set()
        if self.stats.open >= self.max_connections:
            return False
        self.stats.open += 1
        return True

    def _refuse(self) -> None:
        self.stats.refused += 1
        self.stats.changed.set()
        if not self._said_full:
            # Once per episode, not once per connection: a flood must not flood the log.
            self._said_full = True
            log.warning(
                "status server: %d connections open, refusing more (503) until some close",
                self.stats.open,
            )

    def _release(self) -> None:
        self.stats.open -= 1
        self.stats.changed.set()
        if self._said_full and self.stats.open < self.max_connections * 3 // 4:
            self._said_full = False
            if not self.closing:
                log.warning(
                    "status server: connections back to %d; %d were refused meanwhile",
                    self.stats.open,
                    self.stats.refused,
                )


def _is_probe(head: bytes) -> bool:
    method, _, rest = head.partition(b" ")
    target = rest.split(b" ", 1)[0]
    return method in (b"GET", b"HEAD") and target.split(b"?", 1)[0] == HEALTH_PATH.encode()


class _Guarded(asyncio.Protocol):
    def __init__(self, guard: ConnectionGuard) -> None:
        self.guard = guard
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self._head = b""
        self._timer: asyncio.TimerHandle | None = None
        self._probe = False  # let in past the cap, for /healthz only
        self._waiting = False  # past the cap: its head is read before it is let in

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        guard = self.guard
        if not guard._admit():
            if guard.probes_open >= guard.probe_connections:
                guard._refuse()
                transport.write(BUSY)
                transport.close()
                return
            guard.probes_open += 1
            self._probe = self._waiting = True
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(guard.head_timeout_s, self._too_slow)
        if not self._waiting:
            self._let_in(b"")

    def _let_in(self, data: bytes) -> None:
        assert self.transport is not None
        self.inner = self.guard.inner()
        self.inner.connection_made(self.transport)
        if data:
            self.inner.data_received(data)

    def _too_slow(self) -> None:
        self._timer = None
        self.guard.stats.timed_out += 1
        self.guard.stats.changed.set()
        if self.transport is not None:
            self.transport.abort()  # nothing was asked: nothing to answer

    def data_received(self, data: bytes) -> None:
        if self._waiting:
            self._head = (self._head + data)[:MAX_HEAD_BYTES]
            if HEAD_END not in self._head and len(self._head) < MAX_HEAD_BYTES:
                return
            self._waiting = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            head, self._head = self._head, b""
            if not _is_probe(head):
                self.guard._refuse()
                assert self.transport is not None
                self.transport.write(BUSY)
                self.transport.close()
                return
            self._let_in(head)
            return
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
        if self._probe:
            self._probe = False
            self.guard.probes_open -= 1
        elif self.transport is not None and self.inner is not None:
            self.guard._release()
        if self.inner is None:
            return
        inner, self.inner = self.inner, None
        inner.connection_lost(exc)

    def __getattr__(self, name: str) -> Any:
        # aiohttp's handler is reached through its transport, not through us; anything
        # else asked of the protocol goes to it.
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)


# A peer that gave up between its connect and our accept: nothing to do but go on.
PEER_GONE = {errno.ECONNABORTED, errno.EPROTO, errno.EINTR}
# Anything else (no descriptors or memory left, most often): the connection waits in the
# backlog and is tried again a moment later, never in a busy loop.
ACCEPT_RETRY_S = 0.1


async def serve(sock: socket.socket, guard: ConnectionGuard, pacer: Pacer) -> None:
    """Accept connections on ``sock`` (bound and listening) for ``guard``'s protocol, at
    most at ``pacer``'s rate, until cancelled."""
    loop = asyncio.get_running_loop()
    sock.setblocking(False)
    said_short = False
    while True:
        wait = pacer.reserve()
        if wait:
            await anyio.sleep(wait)
        try:
            conn, _ = await loop.sock_accept(sock)
        except OSError as exc:
            if exc.errno in PEER_GONE:
                continue
            if not said_short:
                said_short = True
                log.warning("status server: cannot accept connections now: %s", exc.strerror)
            await anyio.sleep(ACCEPT_RETRY_S)
            continue
        said_short = False
        conn.setblocking(False)
        try:
            await loop.connect_accepted_socket(guard, conn)
        except OSError:
            conn.close()


__all__ = ["HEALTH_PATH", "ConnectionGuard", "GuardStats", "cap_for_limit", "serve"]
