"""The resumption handle: the newest one the server gave, and whether it still holds.

The server hands out handles in ``ModelResumptionUpdate``s; a reconnect sets up with the
newest, so the model session goes on where it was. A handle is good for ``valid_s`` after it
was given (two hours, the Live API says): an older one is forgotten before a connect, which
then starts a fresh session at once rather than ask the service to refuse it. Whether the
newest update was resumable is kept apart from the handle: a GoAway is met by a switch-over
only then (``live/link/handover.py``), while a reconnect still resumes with the last good handle.
"""

from __future__ import annotations

import logging

from live.model import ModelResumptionUpdate
from live.util.backoff import span
from live.util.clock import Clock

log = logging.getLogger("lookout.connection")


class Resumption:
    """The handle a connection resumes with (None: a fresh session), and when it was given."""

    def __init__(self, clock: Clock, valid_s: float) -> None:
        self.clock = clock
        self.valid_s = valid_s
        self.handle: str | None = None
        self.newest_resumable = False  # the newest resumption update was resumable
        self._given_at = 0.0  # when the server gave ``handle``

    def update(self, event: ModelResumptionUpdate) -> None:
        """What the server said: a resumable handle replaces ours; any update says whether
        the session can be resumed now."""
        self.newest_resumable = bool(event.resumable and event.handle)
        if event.resumable and event.handle:
            self.handle = event.handle
            self._given_at = self.clock.now()

    def forget(self) -> None:
        """The next connection starts a fresh session."""
        self.handle = None

    def forget_if_expired(self) -> None:
        if self.handle is None:
            return
        age = self.clock.now() - self._given_at
        if age >= self.valid_s:
            log.info(
                "the session handle is %s old (valid %s): starting a fresh session",
                span(age),
                span(self.valid_s),
            )
            self.handle = None


__all__ = ["Resumption"]
