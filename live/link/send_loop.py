"""The send loop: the outbox, in order, to whichever model connection is up.

``ModelLink`` (``live/link/connection.py``) owns the connection; this sends to it, one message
at a time under ``lock``, which a GoAway switch-over takes too: no send is in flight on the
old connection when the outbox moves to the new one. A connection lost in a send gets its
message back at the front of the outbox and the loss goes to the link, which ends serving
that connection; a message the connection cannot encode is reported and dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from live.events import ErrorEvent, Event
from live.link.outbox import Outbox
from live.model import ConnectionLost, LiveConnection
from live.util.redact import short_error

log = logging.getLogger("lookout.connection")


class SendLoop:
    """Sends ``outbox`` to the connection ``current`` names, waiting for one while none is up."""

    def __init__(
        self,
        outbox: Outbox,
        *,
        current: Callable[[], LiveConnection | None],
        wait_connected: Callable[[], Awaitable[LiveConnection]],
        lost: Callable[[LiveConnection, ConnectionLost], None],
        emit: Callable[[Event], None],
        secrets: tuple[str, ...] = (),
    ) -> None:
        self.outbox = outbox
        self._current = current
        self._wait_connected = wait_connected
        self._lost = lost
        self._emit = emit
        self._secrets = secrets
        # Held for each send and for a switch-over: no send is in flight on the old
        # connection when the outbox moves to the new one.
        self.lock = anyio.Lock()

    async def run(self) -> None:
        """Send the outbox, in order, to whichever connection is up."""
        while True:
            await self.outbox.wait_nonempty()
            await self._wait_connected()
            async with self.lock:
                await self._send_one()

    async def _send_one(self) -> None:
        """Send the outbox's next message to the connection up now (under the send lock)."""
        conn = self._current()
        if conn is None:
            return
        item = self.outbox.pop()
        if item is None:
            return
        try:
            await conn.send(self.outbox.wire(item))
        except ConnectionLost as exc:
            self.outbox.push_front(item)
            self._lost(conn, exc)
            return
        except Exception as exc:
            # A message the connection cannot encode is a bug to report, not a reason
            # to retry it forever and block everything behind it.
            self._emit(ErrorEvent(message=short_error(exc, self._secrets), where="send"))
            log.exception("dropping a message the model connection refused")
            self.outbox.mark_dropped()
            return
        self.outbox.mark_sent()


__all__ = ["SendLoop"]
