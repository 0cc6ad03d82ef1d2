"""``Changes``: a version number that waiters (SSE, MJPEG viewers) can block on."""

from __future__ import annotations

from live.util.signal import Wakeup


class Changes:
    """Bumped from the event loop only; waiting needs no polling."""

    def __init__(self) -> None:
        self.version = 0
        self._wakeup = Wakeup()

    def bump(self) -> None:
        self.version += 1
        self._wakeup.set()

    async def wait(self, seen: int) -> int:
        """Return the current version once it differs from ``seen``."""
        while self.version == seen:
            await self._wakeup.wait()
        return self.version


__all__ = ["Changes"]
