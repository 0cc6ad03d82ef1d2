"""``Changes``: a version number that waiters (SSE, MJPEG viewers) can block on."""

from __future__ import annotations

import anyio


class Changes:
    """Bumped from the event loop only; waiting needs no polling."""

    def __init__(self) -> None:
        self.version = 0
        self._event: anyio.Event | None = None  # made on first wait: needs a running loop

    def bump(self) -> None:
        self.version += 1
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self, seen: int) -> int:
        """Return the current version once it differs from ``seen``."""
        while self.version == seen:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
        return self.version


__all__ = ["Changes"]
