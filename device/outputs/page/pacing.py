"""How fast the status server answers, however many read it: a fixed rate, shared in turn.

The server runs on the device's event loop, beside perception. Each answer costs
that loop a fraction of a millisecond (``/metrics`` most, about 1 ms), so a
hundred readers that ask again as soon as they are answered would keep it busy
for good: the frame driver and the tracker would wait their turn behind them, and
the count would fall behind the scene. Readers can never be allowed to buy that.

So every request waits for its turn before anything is done for it. Turns come
at a fixed rate with a burst allowance (a page that opens loads a dozen files at
once), in the order asked (``rate.Pacer``). A request whose turn is further off
than ``max_wait_s`` is not queued: it is answered ``429`` with ``Retry-After``
once ``max_wait_s`` has passed (the refusal is paced too: a reader that ignores
``Retry-After`` still gets at most one answer per ``max_wait_s``). What the
readers lose is how often they are answered; what they are told is always
current (the bodies are the device's state at the moment of answering,
``page/bodies.py``). ``/healthz`` has a lane of its own, so a monitor's probe never
waits behind pollers of the page.

Connections are paced the same way, before they are accepted
(``connection_guard.serve``): a reader that opens a new connection per request,
or one refused past the cap that comes straight back, waits in the kernel's
backlog rather than costing the loop.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable

import anyio
from aiohttp import web

from device.outputs.page.connection_guard import HEALTH_PATH
from device.outputs.page.rate import Pacer, PacingStats
from device.outputs.page.request_guard import Handler

log = logging.getLogger("lookout.status")


class RequestPacing:
    """The server's first middleware: every request waits for its turn."""

    def __init__(
        self,
        *,
        rate_per_s: float = 50.0,
        burst: int = 50,
        health_rate_per_s: float = 10.0,
        health_burst: int = 10,
        max_wait_s: float = 2.0,
        stats: PacingStats | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reads = Pacer(rate_per_s, burst, monotonic=monotonic)
        self.probes = Pacer(health_rate_per_s, health_burst, monotonic=monotonic)
        self.max_wait_s = max_wait_s
        self.stats = stats if stats is not None else PacingStats()
        self._said_busy = False

    @web.middleware
    async def pace(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        lane = self.probes if request.path == HEALTH_PATH else self.reads
        wait = lane.reserve(self.max_wait_s)
        if wait is None:
            self.stats.refused += 1
            self._busy()
            retry_s = lane.backlog_s()
            await anyio.sleep(self.max_wait_s)
            return web.Response(
                status=429,
                text="too many requests: answered in turn, and this one's turn is "
                f"{retry_s:.0f} s off; try again later\n",
                headers={"Retry-After": str(max(1, math.ceil(retry_s)))},
            )
        if wait > 0:
            self.stats.waited += 1
            await anyio.sleep(wait)
        elif self._said_busy and lane is self.reads:
            self._said_busy = False
            log.warning(
                "status server: readers back under the rate; %d answers waited their turn, "
                "%d were refused (429) meanwhile",
                self.stats.waited,
                self.stats.refused,
            )
        return await handler(request)

    def _busy(self) -> None:
        if not self._said_busy:
            # Once per episode: a flood must not flood the log.
            self._said_busy = True
            log.warning(
                "status server: readers ask for more than %.0f answers/s; answering in turn "
                "(429 past %g s of waiting), the count goes on",
                1.0 / self.reads.interval_s,
                self.max_wait_s,
            )


__all__ = ["RequestPacing"]
