"""Resume before the cut: on GoAway, open the resumed connection while the old one still works.

A GoAway says the server will close the connection in ``time_left``. Closing it at once and
reconnecting leaves a gap in which emissions wait for a connection; instead ``ModelLink``
opens the resumed connection (with the newest resumption handle) beside the old one, keeps
sending on the old one until the new one's setup is complete, then moves the outbox over.

Only a handle the server said was resumable, and is still the newest, is used: handles are
not resumable while a call or a generation runs (``resumable: false``), and resuming an older
one would rewind the session. Without one, or on a connection that did not last (a server
that says GoAway straight after every setup is backed off, not chased), or when the new
connection cannot be opened in time, the link does what it always did: it closes the old
connection and reconnects.
"""

from __future__ import annotations

import logging

from live.model import LiveConnection, LiveModel, LiveSetup, ModelGoAway
from live.util.clock import Clock

log = logging.getLogger("lookout.connection")


def why_not(
    event: ModelGoAway, *, stable: bool, handle: str | None, newest_resumable: bool
) -> str | None:
    """Why this GoAway cannot be met by a switch-over (None: it can)."""
    if event.time_left_s is not None and event.time_left_s <= 0:
        return "no time left"
    if not stable:
        return "the connection did not last"
    if handle is None:
        return "no resumable session handle"
    if not newest_resumable:
        return "the newest session handle is not resumable (a call or a generation runs)"
    return None


async def open_resumed(
    model: LiveModel, setup: LiveSetup, clock: Clock, within_s: float
) -> LiveConnection | None:
    """The resumed connection, set up within ``within_s``; None if it could not be (said)."""
    try:
        with clock.fail_after(within_s):
            return await model.connect(setup)
    except TimeoutError:
        log.info("GoAway: the resumed connection was not ready in %.3g s", within_s)
    except Exception as exc:  # anything: the old connection ends as it always did
        log.info("GoAway: opening the resumed connection failed: %s", type(exc).__name__)
    return None


__all__ = ["open_resumed", "why_not"]
